/**
 * HASHTABLE_LOOKUP: looks keys up in a sorted key table (NNAPI HashtableLookup.cpp). Inputs:
 * 0 lookups (TENSOR_INT32, rank 1), 1 keys (TENSOR_INT32, rank 1, sorted ascending),
 * 2 values (TENSOR_FLOAT32, TENSOR_INT32 or TENSOR_QUANT8_ASYMM, rank >= 1, one row per key).
 * Outputs: 0 [lookups, ...values dims 1..] with the value row of each found key (zeros for a
 * miss), 1 hits (TENSOR_QUANT8_ASYMM [lookups], scale 1, zero point 0): 1 found, 0 missed.
 */
import { hashtableLookup as hashtableKernel } from "../kernels/lookup_tables.ts";
import { elementCount } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes } from "./operation.ts";

const LOOKUPS = 0;
const KEYS = 1;
const VALUES = 2;

const VALUE_TYPES: readonly OperandType[] = [
  "TENSOR_FLOAT32",
  "TENSOR_INT32",
  "TENSOR_QUANT8_ASYMM",
];

/** HASHTABLE_LOOKUP (HAL 1.0). */
export const hashtableLookup: OperationDefinition<"HASHTABLE_LOOKUP"> = {
  type: "HASHTABLE_LOOKUP",

  validate(signature) {
    checkArity(signature, [3], 2);
    const values = signature.inputs[VALUES];
    checkInputType(values, VALUES, VALUE_TYPES);
    checkTypes(
      signature,
      ["TENSOR_INT32", "TENSOR_INT32", values.type],
      [values.type, "TENSOR_QUANT8_ASYMM"],
    );
    checkRank(signature.inputs[LOOKUPS], `input ${LOOKUPS}`, (r) => r === 1, "1");
    checkRank(signature.inputs[KEYS], `input ${KEYS}`, (r) => r === 1, "1");
    checkRank(values, `input ${VALUES}`, (r) => r >= 1, "at least 1");
    const [output, hits] = signature.outputs;
    checkRank(hits, "output 1", (r) => r === 1, "1");
    if (values.type === "TENSOR_QUANT8_ASYMM") checkSameQuantization(values, output, VALUES);
    check(
      hits.scale === 1 && hits.zeroPoint === 0,
      `output 1 (operand ${hits.index}) (hits) must have scale 1 and zero point 0`,
    );
    return "V1_0";
  },

  prepare(inputs) {
    const lookups = inputs[LOOKUPS].shape;
    const keys = inputs[KEYS].shape;
    const values = inputs[VALUES].shape;
    check(
      lookups.length === 1,
      `lookups (input ${LOOKUPS}) has rank ${lookups.length}, expected 1`,
    );
    check(keys.length === 1, `keys (input ${KEYS}) has rank ${keys.length}, expected 1`);
    check(values.length >= 1, `values (input ${VALUES}) must have rank at least 1`);
    check(
      keys[0] === values[0],
      `keys (input ${KEYS}) has ${keys[0]} entries but values (input ${VALUES}) has ${
        values[0]
      } rows`,
    );
    return [[lookups[0], ...values.slice(1)], [lookups[0]]];
  },

  /** A binary search of the keys and one row copy per lookup. */
  cost(inputs, outputs) {
    const searches = elementCount(inputs[LOOKUPS].shape) *
      Math.ceil(Math.log2(elementCount(inputs[KEYS].shape) + 1));
    return searches + outputs.reduce((n, o) => n + elementCount(o.shape), 0);
  },

  execute(inputs, outputs) {
    const values = inputs[VALUES];
    hashtableKernel(
      inputs[LOOKUPS].data as Int32Array,
      inputs[KEYS].data as Int32Array,
      values.data!,
      values.shape[0],
      values.shape.slice(1).reduce((a, b) => a * b, 1),
      outputs[0].data!,
      outputs[1].data!,
    );
  },
};
