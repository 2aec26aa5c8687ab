/**
 * Reductions over a set of axes (MEAN, REDUCE_*) and along one axis (ARGMAX, ARGMIN), in the
 * element order of TFLite's `reference_ops::ReduceGeneric`/`Mean` as the NNAPI CPU
 * reference runs them: the input is walked in row-major order and each element is folded
 * into its output element, so float results round exactly as there when the accumulator
 * has the element type (float16 accumulates in a Float16Array, as Android's `_Float16`).
 */
import type { AxisSplit } from "./axis_split.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** A shape and which of its axes are reduced (already resolved, duplicates merged). */
export interface ReductionPlan {
  shape: readonly number[];
  reduced: readonly boolean[];
}

/**
 * For each input element in row-major order, the index of the output element it folds
 * into (the output keeps the non-reduced axes in order).
 */
function outputIndices(plan: ReductionPlan): Int32Array {
  const { shape, reduced } = plan;
  const rank = shape.length;
  let total = 1;
  for (const d of shape) total *= d;
  const strides = new Array<number>(rank).fill(0);
  let stride = 1;
  for (let d = rank - 1; d >= 0; d--) {
    if (reduced[d]) continue;
    strides[d] = stride;
    stride *= shape[d];
  }
  const indices = new Int32Array(total);
  const position = new Array<number>(rank).fill(0);
  let out = 0;
  for (let i = 0; i < total; i++) {
    indices[i] = out;
    for (let d = rank - 1; d >= 0; d--) {
      position[d]++;
      out += strides[d];
      if (position[d] < shape[d]) break;
      out -= strides[d] * position[d];
      position[d] = 0;
    }
  }
  return indices;
}

/**
 * The plan as [outer, reduced, inner] extents when its reduced axes are one contiguous run
 * (a global pooling over NHWC's height and width is [batches, pixels, channels]): then the
 * row-major walk folds input `(a * reduced + r) * inner + i` into output `a * inner + i`.
 */
function contiguousBlock(plan: ReductionPlan): [number, number, number] | undefined {
  const first = plan.reduced.indexOf(true);
  const last = plan.reduced.lastIndexOf(true);
  if (first < 0 || plan.reduced.slice(first, last + 1).includes(false)) return undefined;
  const product = (from: number, to: number) =>
    plan.shape.slice(from, to).reduce((a, b) => a * b, 1);
  return [product(0, first), product(first, last + 1), product(last + 1, plan.shape.length)];
}

/** Number of input elements folded into each output element. */
export function reducedCount(plan: ReductionPlan): number {
  let count = 1;
  plan.shape.forEach((d, i) => {
    if (plan.reduced[i]) count *= d;
  });
  return count;
}

/** How a reduction combines an element into its accumulator. */
export type Fold = "sum" | "product" | "min" | "max" | "any" | "all";

/**
 * acc[to + k] = fold(acc[to + k], input[from + k]) for k < n, each result stored (so it
 * rounds to `acc`'s element type at each step). The fold is chosen once per row: a combine
 * function called per element would be one megamorphic call site V8 cannot inline.
 */
function foldRow(
  fold: Fold,
  input: ReadonlyNumbers,
  from: number,
  acc: Numbers,
  to: number,
  n: number,
): void {
  switch (fold) {
    case "sum":
      for (let k = 0; k < n; k++) acc[to + k] += input[from + k];
      return;
    case "product":
      for (let k = 0; k < n; k++) acc[to + k] *= input[from + k];
      return;
    case "min":
      for (let k = 0; k < n; k++) {
        const x = input[from + k];
        if (x < acc[to + k]) acc[to + k] = x;
      }
      return;
    case "max":
      for (let k = 0; k < n; k++) {
        const x = input[from + k];
        if (x > acc[to + k]) acc[to + k] = x;
      }
      return;
    case "any":
      for (let k = 0; k < n; k++) acc[to + k] = acc[to + k] || input[from + k] ? 1 : 0;
      return;
    case "all":
      for (let k = 0; k < n; k++) acc[to + k] = acc[to + k] && input[from + k] ? 1 : 0;
      return;
  }
}

/** Folds `count` consecutive input elements from `from` into the one accumulator `acc[to]`. */
function foldRun(
  fold: Fold,
  input: ReadonlyNumbers,
  from: number,
  count: number,
  acc: Numbers,
  to: number,
): void {
  if (fold === "min" || fold === "max") {
    // No rounding between steps: the running extreme can live in a local.
    let best = acc[to];
    const end = from + count;
    if (fold === "min") {
      for (let i = from; i < end; i++) if (input[i] < best) best = input[i];
    } else {
      for (let i = from; i < end; i++) if (input[i] > best) best = input[i];
    }
    acc[to] = best;
    return;
  }
  if (fold === "sum") {
    if (acc instanceof Float32Array) {
      // A local rounded to float32 at each step, as storing it would round it.
      let sum = acc[to];
      for (let i = from; i < from + count; i++) sum = Math.fround(sum + input[i]);
      acc[to] = sum;
      return;
    }
    // Stored at each step: the sum rounds to `acc`'s element type as it goes.
    for (let i = from; i < from + count; i++) acc[to] += input[i];
    return;
  }
  for (let r = 0; r < count; r++) foldRow(fold, input, from + r, acc, to, 1);
}

/**
 * Folds the input into `out` (already sized to the output): every output element starts at
 * `init` and takes `fold(acc, x)` for each of its input elements in row-major order, stored
 * back into `out` (so it rounds to `out`'s element type at each step). Reduced axes in one
 * contiguous run (the common case) walk whole rows; any other set walks an index per element.
 */
export function reduceGeneric(
  input: ReadonlyNumbers,
  plan: ReductionPlan,
  out: Numbers,
  reduction: { init: number; fold: Fold },
): void {
  const { fold } = reduction;
  for (let o = 0; o < out.length; o++) out[o] = reduction.init;
  const block = contiguousBlock(plan);
  if (block) {
    const [outer, reduced, inner] = block;
    let from = 0;
    for (let a = 0; a < outer; a++) {
      if (inner === 1) {
        foldRun(fold, input, from, reduced, out, a);
        from += reduced;
        continue;
      }
      for (let r = 0; r < reduced; r++, from += inner) {
        foldRow(fold, input, from, out, a * inner, inner);
      }
    }
    return;
  }
  const indices = outputIndices(plan);
  for (let i = 0; i < indices.length; i++) foldRow(fold, input, i, out, indices[i], 1);
}

/** Float MEAN: float32 sums divided by the count of reduced elements. */
export function meanFloat32(input: Float32Array, plan: ReductionPlan, out: Float32Array): void {
  reduceGeneric(input, plan, out, { init: 0, fold: "sum" });
  const count = Math.fround(reducedCount(plan));
  if (count === 0) return;
  for (let o = 0; o < out.length; o++) out[o] = out[o] / count;
}

/**
 * uint8 MEAN as NNAPI runs it: int32 sums of the raw values, truncating integer division
 * (input and output share their quantization).
 */
export function meanQuant8(input: Uint8Array, plan: ReductionPlan, out: Uint8Array): void {
  const sums = new Int32Array(out.length);
  reduceGeneric(input, plan, sums, { init: 0, fold: "sum" });
  const count = reducedCount(plan);
  if (count === 0) return;
  for (let o = 0; o < out.length; o++) out[o] = Math.trunc(sums[o] / count);
}

/**
 * ARGMAX (`greater`) or ARGMIN (`less`) along the split's axis: the first index of the
 * extreme value of each `outer * inner` vector.
 */
export function argMinMax(
  input: ReadonlyNumbers,
  split: AxisSplit,
  isMax: boolean,
  out: Int32Array,
): void {
  const { outer, axis, inner } = split;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < inner; i++) {
      const base = o * axis * inner + i;
      let best = input[base];
      let bestIndex = 0;
      for (let a = 1; a < axis; a++) {
        const value = input[base + a * inner];
        if (isMax ? value > best : value < best) {
          best = value;
          bestIndex = a;
        }
      }
      out[o * inner + i] = bestIndex;
    }
  }
}
