/**
 * LSH_PROJECTION: projects an input tensor to a bit vector by locality-sensitive hashing
 * (NNAPI LSHProjection.cpp). Inputs: 0 hash seeds [numHash, numBits] (TENSOR_FLOAT32, or
 * TENSOR_FLOAT16 since HAL 1.2), 1 input (rank >= 1; its dim 0 enumerates the hashed items),
 * 2 optional weight [items] of the hash type, 3 INT32 type (1 SPARSE_DEPRECATED, 2 DENSE,
 * 3 SPARSE). Output TENSOR_INT32: [numHash] (sparse) or [numHash * numBits] (dense).
 * As in the reference, sparse projections take no weight and dense ones require it.
 */
import {
  LSH_DENSE,
  LSH_SPARSE,
  LSH_SPARSE_DEPRECATED,
  lshProjection as lshKernel,
} from "../kernels/hash_lsh_projection.ts";
import { byteSize, toBytes } from "../nnapi/tensor.ts";
import type { HalVersion } from "../nnapi/types.ts";
import { checkInputType } from "./common/operand_types.ts";
import { knownScalar } from "./common/scalars.ts";
import type { OperationDefinition, PrepareInput } from "./operation.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  OperationError,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const HASH = 0;
const INPUT = 1;
const WEIGHT = 2;
const TYPE = 3;

/** Whether an optional input is known to be present (`undefined` = not known yet). */
function presence(input: PrepareInput): boolean | undefined {
  if (input.value === undefined) return undefined;
  return input.value !== null;
}

/** LSH_PROJECTION (HAL 1.0; float16 seeds/weights or the SPARSE type need HAL 1.2). */
export const lshProjection: OperationDefinition<"LSH_PROJECTION"> = {
  type: "LSH_PROJECTION",
  optionalInputs: [2],

  validate(signature) {
    checkArity(signature, [4], 1);
    const inputType = signature.inputs[INPUT].type;
    checkInputType(signature.inputs[INPUT], INPUT, [
      "TENSOR_FLOAT16",
      "TENSOR_FLOAT32",
      "TENSOR_INT32",
      "TENSOR_QUANT8_ASYMM",
    ]);
    const hashType = signature.inputs[HASH].type;
    check(
      hashType === "TENSOR_FLOAT32" || hashType === "TENSOR_FLOAT16",
      `input ${HASH} (operand ${
        signature.inputs[HASH].index
      }) has unsupported hash type ${hashType}`,
    );
    checkTypes(signature, [hashType, inputType, hashType, "INT32"], ["TENSOR_INT32"]);
    checkRank(signature.inputs[HASH], `input ${HASH}`, (r) => r === 2, "2");
    checkRank(signature.inputs[INPUT], `input ${INPUT}`, (r) => r >= 1, "at least 1");
    checkRank(signature.outputs[0], "output 0", (r) => r === 1, "1");
    const projection = knownScalar(signature.inputs[TYPE]);
    check(
      projection === undefined || projection === LSH_SPARSE_DEPRECATED ||
        projection === LSH_DENSE || projection === LSH_SPARSE,
      `input ${TYPE} (operand ${
        signature.inputs[TYPE].index
      }) has unknown projection type ${projection}`,
    );
    let version: HalVersion = "V1_0";
    if (hashType === "TENSOR_FLOAT16" || inputType === "TENSOR_FLOAT16") version = "V1_2";
    if (projection === LSH_SPARSE) version = "V1_2";
    return version;
  },

  prepare(inputs) {
    const hash = inputs[HASH].shape;
    const input = inputs[INPUT].shape;
    check(hash.length === 2, `hash (input ${HASH}) has rank ${hash.length}, expected 2`);
    check(hash[1] <= 32, `hash (input ${HASH}) has ${hash[1]} bits per function, at most 32`);
    check(input.length >= 1, `input ${INPUT} must have rank at least 1`);
    const type = scalarValue(inputs[TYPE], `type (input ${TYPE})`);
    const weighted = presence(inputs[WEIGHT]);
    switch (type) {
      case LSH_SPARSE_DEPRECATED:
      case LSH_SPARSE:
        check(weighted !== true, `a sparse projection takes no weight (input ${WEIGHT})`);
        return [[hash[0]]];
      case LSH_DENSE: {
        check(weighted !== false, `a dense projection requires the weight (input ${WEIGHT})`);
        if (weighted) {
          const weight = inputs[WEIGHT].shape;
          check(
            weight.length === 1,
            `weight (input ${WEIGHT}) has rank ${weight.length}, expected 1`,
          );
          check(
            weight[0] === input[0],
            `weight (input ${WEIGHT}) has ${weight[0]} entries but the input has ${input[0]} items`,
          );
        }
        return [[hash[0] * hash[1]]];
      }
      default:
        throw new OperationError(`unknown projection type ${type} (input ${TYPE})`);
    }
  },

  /**
   * Every seed fingerprints every item: measured, about 250 multiply-adds' time per
   * fingerprint (BigInt arithmetic) plus 16 per byte hashed.
   */
  cost(inputs) {
    const [numHash, numBits] = inputs[HASH].shape;
    const input = inputs[INPUT];
    const items = input.shape[0] ?? 1;
    return numHash * numBits * (256 * items + 16 * byteSize(input.type, input.shape));
  },

  execute(inputs, outputs) {
    const hash = inputs[HASH];
    const input = inputs[INPUT];
    const weight = inputs[WEIGHT].data as ArrayLike<number> | null;
    const type = scalarOf(inputs[TYPE]);
    if (type === LSH_DENSE) {
      check(weight !== null, `a dense projection requires the weight (input ${WEIGHT})`);
      check(
        weight.length === input.shape[0],
        `weight (input ${WEIGHT}) has ${weight.length} entries but the input has ${
          input.shape[0]
        } items`,
      );
    } else {
      check(weight === null, `a sparse projection takes no weight (input ${WEIGHT})`);
    }
    const count = input.shape[0];
    const bytes = toBytes(input.data!);
    lshKernel(
      type,
      hash.data as ArrayLike<number>,
      hash.shape[0],
      hash.shape[1],
      { bytes, count, itemBytes: count === 0 ? 0 : bytes.byteLength / count },
      weight,
      outputs[0].data as Int32Array,
    );
  },
};
