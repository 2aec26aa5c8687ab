/**
 * EMBEDDING_LOOKUP: gathers rows of a value tensor (NNAPI EmbeddingLookup.cpp). Inputs:
 * 0 lookups (TENSOR_INT32, rank 1), 1 values (rank >= 2). Output [lookups, ...values dims
 * 1..]: row i is values[lookups[i]]; an out-of-range lookup fails the execution. Value
 * forms: TENSOR_FLOAT32, TENSOR_INT32 and TENSOR_QUANT8_ASYMM (reported V1_0),
 * TENSOR_FLOAT16 and TENSOR_QUANT8_ASYMM_SIGNED (V1_3). Rows are copied, never converted.
 */
import { embeddingLookup as embeddingKernel } from "../kernels/lookup_tables.ts";
import { elementCount } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, OperationError } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const LOOKUPS = 0;
const VALUES = 1;

const VALUE_TYPES: readonly OperandType[] = [
  "TENSOR_FLOAT32",
  "TENSOR_FLOAT16",
  "TENSOR_INT32",
  "TENSOR_QUANT8_ASYMM",
];

/** EMBEDDING_LOOKUP (HAL 1.0; float16 values HAL 1.3). */
export const embeddingLookup: OperationDefinition<"EMBEDDING_LOOKUP"> = withSignedQuant8({
  type: "EMBEDDING_LOOKUP",

  validate(signature) {
    checkArity(signature, [2], 1);
    const values = signature.inputs[VALUES];
    checkInputType(values, VALUES, VALUE_TYPES);
    checkTypes(signature, ["TENSOR_INT32", values.type], [values.type]);
    checkRank(signature.inputs[LOOKUPS], `input ${LOOKUPS}`, (r) => r === 1, "1");
    checkRank(values, `input ${VALUES}`, (r) => r >= 2, "at least 2");
    const output = signature.outputs[0];
    checkRank(output, "output 0", (r) => r >= 2, "at least 2");
    if (values.type === "TENSOR_QUANT8_ASYMM") checkSameQuantization(values, output, VALUES);
    return values.type === "TENSOR_FLOAT16" ? "V1_3" : "V1_0";
  },

  prepare(inputs) {
    const lookups = inputs[LOOKUPS].shape;
    const values = inputs[VALUES].shape;
    check(
      lookups.length === 1,
      `lookups (input ${LOOKUPS}) has rank ${lookups.length}, expected 1`,
    );
    check(values.length >= 2, `values (input ${VALUES}) has rank ${values.length}, expected >= 2`);
    return [[lookups[0], ...values.slice(1)]];
  },

  /** One row copy per lookup: the table's size does not matter. */
  cost: (inputs, outputs) => elementCount(inputs[LOOKUPS].shape) + elementCount(outputs[0].shape),

  execute(inputs, outputs) {
    const lookups = inputs[LOOKUPS].data as Int32Array;
    const values = inputs[VALUES];
    const rows = values.shape[0];
    const rowSize = values.shape.slice(1).reduce((a, b) => a * b, 1);
    const bad = embeddingKernel(
      lookups,
      values.data!,
      rows,
      rowSize,
      outputs[0].data!,
    );
    if (bad >= 0) {
      throw new OperationError(
        `lookup ${bad} (input ${LOOKUPS}) is ${
          lookups[bad]
        }, outside the ${rows} rows of input ${VALUES}`,
      );
    }
  },
});
