/**
 * SLICE: a contiguous window of a tensor (NNAPI Slice.cpp). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_FLOAT16, TENSOR_INT32 or TENSOR_QUANT8_ASYMM; rank >= 1), 1 begin,
 * 2 size (TENSOR_INT32 [rank]; begin >= 0, size -1 = to the end, begin + size within the
 * dim). Begin and size may be model inputs. The output keeps the input's quantization.
 */
import { stridedSlice } from "../kernels/shape_transform.ts";
import {
  int32Vector,
  knownInputs,
  MOVED_TYPES_WITH_INT32,
  validateMoved,
} from "./common/shape_ops.ts";
import { check, checkArity, type OperationDefinition, type PrepareInput } from "./operation.ts";

/** The begin and extents of a call's window. */
function window(inputs: readonly PrepareInput[]): { begin: number[]; counts: number[] } {
  const shape = inputs[0].shape;
  check(shape.length >= 1, "input 0 has rank 0, expected at least 1");
  const begin = int32Vector(inputs[1], "begin (input 1)", shape.length);
  const size = int32Vector(inputs[2], "size (input 2)", shape.length);
  const counts = shape.map((dim, d) => {
    const count = size[d] === -1 ? dim - begin[d] : size[d];
    check(
      begin[d] >= 0 && count >= 0 && begin[d] + count <= dim,
      `begin ${begin[d]} and size ${size[d]} of dimension ${d} exceed its ${dim} elements`,
    );
    return count;
  });
  return { begin, counts };
}

/** SLICE (HAL 1.2). */
export const slice: OperationDefinition<"SLICE"> = {
  type: "SLICE",

  validate(signature) {
    checkArity(signature, [3], 1);
    validateMoved(signature, {
      supported: MOVED_TYPES_WITH_INT32,
      params: ["TENSOR_INT32", "TENSOR_INT32"],
      ranks: [[0, "input 0", "at least 1"], [1, "begin (input 1)", 1], [2, "size (input 2)", 1]],
    });
    return "V1_2";
  },

  prepare(inputs) {
    return [window(inputs).counts];
  },

  execute(inputs, outputs) {
    const { begin, counts } = window(knownInputs(inputs));
    const step = counts.map(() => 1);
    stridedSlice(inputs[0].data!, inputs[0].shape, { begin, step, counts }, outputs[0].data!);
  },
};
