/**
 * STRIDED_SLICE: every stride-th element of a window per dimension (NNAPI StridedSlice.cpp,
 * TFLite semantics). Inputs: 0 the tensor (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, or
 * TENSOR_FLOAT16 since HAL 1.2; rank 1 to 4), 1 begin, 2 end, 3 strides (TENSOR_INT32
 * [rank]; negative begin/end count from the end; strides nonzero), 4 begin mask, 5 end mask
 * (INT32: bit d set = ignore begin/end of dim d), 6 shrink-axis mask (INT32: bit d set = take
 * one element and drop dim d). The output keeps the input's quantization.
 */
import { stridedSlice as stridedSliceKernel } from "../kernels/shape_transform.ts";
import {
  checkShapeRank,
  int32Vector,
  knownInputs,
  MOVED_TYPES,
  validateMoved,
  versionWithFloat16,
} from "./common/shape_ops.ts";
import {
  check,
  checkArity,
  type OperationDefinition,
  type PrepareInput,
  scalarValue,
} from "./operation.ts";

/** NNAPI `ClampedIndex`: a begin/end index wrapped and clamped into the dimension. */
function clampedIndex(index: number, dim: number, positiveStride: boolean): number {
  const remainder = (i: number) => ((i % dim) + dim) % dim;
  if (positiveStride) {
    return index >= dim ? dim : remainder(Math.min(Math.max(index, -dim), dim));
  }
  return index < -dim ? -1 : remainder(Math.min(index, dim - 1));
}

export interface SliceWindow {
  begin: number[];
  step: number[];
  counts: number[];
  /** The output shape: `counts` without the shrunk dims. */
  shape: number[];
}

/** The window of a call, as NNAPI's `stridedSlicePrepare` computes it. */
export function sliceWindow(inputs: readonly PrepareInput[]): SliceWindow {
  const shape = inputs[0].shape;
  checkShapeRank(shape, "input 0", 1, 4);
  const rank = shape.length;
  const begins = int32Vector(inputs[1], "begin (input 1)", rank);
  const ends = int32Vector(inputs[2], "end (input 2)", rank);
  const strides = int32Vector(inputs[3], "strides (input 3)", rank);
  const beginMask = scalarValue(inputs[4], "begin mask (input 4)");
  const endMask = scalarValue(inputs[5], "end mask (input 5)");
  const shrinkMask = scalarValue(inputs[6], "shrink axis mask (input 6)");
  const window: SliceWindow = { begin: [], step: [], counts: [], shape: [] };
  for (let d = 0; d < rank; d++) {
    const dim = shape[d];
    const stride = strides[d];
    check(stride !== 0, `strides (input 3) entry ${d} is 0`);
    const positive = stride > 0;
    const begin = beginMask & (1 << d)
      ? (positive ? 0 : dim - 1)
      : clampedIndex(begins[d], dim, positive);
    let count: number;
    if (shrinkMask & (1 << d)) {
      check(
        begin >= 0 && begin < dim,
        `dimension ${d} is shrunk but begin ${begins[d]} is outside its ${dim} elements`,
      );
      count = 1;
    } else {
      const end = endMask & (1 << d) ? (positive ? dim : -1) : clampedIndex(ends[d], dim, positive);
      count = Math.max(0, Math.ceil((end - begin) / stride));
      window.shape.push(count);
    }
    window.begin.push(begin);
    window.step.push(stride);
    window.counts.push(count);
  }
  return window;
}

/** STRIDED_SLICE (HAL 1.1; float16 needs HAL 1.2). */
export const stridedSlice: OperationDefinition<"STRIDED_SLICE"> = {
  type: "STRIDED_SLICE",

  validate(signature) {
    checkArity(signature, [7], 1);
    const input = validateMoved(signature, {
      supported: MOVED_TYPES,
      params: ["TENSOR_INT32", "TENSOR_INT32", "TENSOR_INT32", "INT32", "INT32", "INT32"],
      ranks: [[0, "input 0", "at most 4"], [1, "input 1", 1], [2, "input 2", 1], [3, "input 3", 1]],
    });
    return versionWithFloat16(input, "V1_1");
  },

  prepare(inputs) {
    return [sliceWindow(inputs).shape];
  },

  execute(inputs, outputs) {
    const window = sliceWindow(knownInputs(inputs));
    stridedSliceKernel(inputs[0].data!, inputs[0].shape, window, outputs[0].data!);
  },
};
