/**
 * TOPK_V2 on the last axis: the k largest values of each row, largest first, with their
 * positions. Equal values come out with the higher position first, as NNAPI's
 * `TopK_V2.cpp` orders (value, index) pairs.
 */
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Writes the top `k` of each `rowSize` row of `input` into `values` and `indices`. */
export function topK(
  input: ReadonlyNumbers,
  shape: { rowSize: number; k: number },
  values: Numbers,
  indices: Int32Array,
): void {
  const { rowSize, k } = shape;
  const rows = rowSize === 0 ? 0 : input.length / rowSize;
  const order = new Array<number>(rowSize);
  for (let r = 0; r < rows; r++) {
    const base = r * rowSize;
    for (let i = 0; i < rowSize; i++) order[i] = i;
    order.sort((a, b) => {
      const va = input[base + a];
      const vb = input[base + b];
      return va !== vb ? (vb > va ? 1 : -1) : b - a;
    });
    for (let i = 0; i < k; i++) {
      values[r * k + i] = input[base + order[i]];
      indices[r * k + i] = order[i];
    }
  }
}
