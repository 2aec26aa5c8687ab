/**
 * TRANSPOSE: permutes the dimensions of a tensor (NNAPI Transpose.cpp). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2; rank 1 to 4), 1 the
 * optional permutation (TENSOR_INT32 [rank]; output dim i is input dim perm[i]; omitted =
 * reversed dims). The output keeps the input's quantization.
 */
import { transpose as transposeKernel } from "../kernels/shape_transform.ts";
import {
  checkShapeRank,
  int32Vector,
  knownInputs,
  MOVED_TYPES,
  validateMoved,
  versionWithFloat16,
} from "./common/shape_ops.ts";
import { check, checkArity, type OperationDefinition, type PrepareInput } from "./operation.ts";

const PERM = 1;

/** The permutation of a call: the given one (checked) or the reversed dims. */
function permutation(inputs: readonly PrepareInput[]): number[] {
  const rank = inputs[0].shape.length;
  checkShapeRank(inputs[0].shape, "input 0", 1, 4);
  if (inputs[PERM].value === null) return Array.from({ length: rank }, (_, i) => rank - 1 - i);
  const perm = int32Vector(inputs[PERM], `permutation (input ${PERM})`, rank);
  const seen = new Set<number>();
  for (const p of perm) {
    check(
      Number.isInteger(p) && p >= 0 && p < rank && !seen.has(p),
      `permutation (input ${PERM}) [${perm.join(",")}] is not a permutation of ${rank} dims`,
    );
    seen.add(p);
  }
  return perm;
}

/** TRANSPOSE (HAL 1.1; float16 needs HAL 1.2). */
export const transpose: OperationDefinition<"TRANSPOSE"> = {
  type: "TRANSPOSE",
  optionalInputs: [PERM],

  validate(signature) {
    checkArity(signature, [2], 1);
    const input = validateMoved(signature, {
      supported: MOVED_TYPES,
      params: ["TENSOR_INT32"],
      ranks: [[0, "input 0", "at most 4"], [PERM, `permutation (input ${PERM})`, 1]],
    });
    return versionWithFloat16(input, "V1_1");
  },

  prepare(inputs) {
    const shape = inputs[0].shape;
    return [permutation(inputs).map((p) => shape[p])];
  },

  execute(inputs, outputs) {
    const perm = permutation(knownInputs(inputs));
    transposeKernel(inputs[0].data!, inputs[0].shape, perm, outputs[0].data!);
  },
};
