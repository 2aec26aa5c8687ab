/**
 * LOG_SOFTMAX along one axis in float32, as NNAPI's `LogSoftmax.cpp` computes it:
 * (x - max) * beta - log(sum exp((x - max) * beta)).
 */
import type { AxisSplit } from "./axis_split.ts";

/** Float log-softmax of each `outer * inner` vector along the split's axis. */
export function logSoftmaxFloat32(
  input: Float32Array,
  split: AxisSplit,
  beta: number,
  out: Float32Array,
): void {
  const { outer, axis, inner } = split;
  const f = Math.fround;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const start = o * axis * inner + i;
      const end = start + axis * inner;
      let max = input[start];
      for (let p = start + inner; p < end; p += inner) if (input[p] > max) max = input[p];
      let sum = 0;
      for (let p = start; p < end; p += inner) {
        sum = f(sum + f(Math.exp(f(f(input[p] - max) * beta))));
      }
      const logSum = f(Math.log(sum));
      for (let p = start; p < end; p += inner) out[p] = f(f(input[p] - max) * beta) - logSum;
    }
  }
}
