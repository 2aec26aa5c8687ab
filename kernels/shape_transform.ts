/**
 * Element-moving kernels of the shape and layout operations (PAD, TRANSPOSE, STRIDED_SLICE,
 * SLICE, SPLIT, GATHER, TILE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, CHANNEL_SHUFFLE): pure
 * index arithmetic on row-major data, so every element type is exact.
 */
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

/** Row-major element strides of a shape. */
export function rowMajorStrides(shape: readonly number[]): number[] {
  const strides = new Array<number>(shape.length);
  let stride = 1;
  for (let d = shape.length - 1; d >= 0; d--) {
    strides[d] = stride;
    stride *= shape[d];
  }
  return strides;
}

/** A walk over a `shape`-sized box of one array: the first element and per-dim steps. */
export interface StridedView {
  offset: number;
  strides: readonly number[];
}

/**
 * Copies a box of `shape` elements from one strided view to another: the general form of
 * transposes, slices and window writes.
 */
export function copyStrided(
  shape: readonly number[],
  input: ReadonlyNumbers,
  from: StridedView,
  output: Numbers,
  to: StridedView,
): void {
  const rank = shape.length;
  for (const extent of shape) if (extent === 0) return;
  if (rank === 0) {
    output[to.offset] = input[from.offset];
    return;
  }
  const index = new Array<number>(rank).fill(0);
  const last = rank - 1;
  const inner = shape[last];
  const inStep = from.strides[last];
  const outStep = to.strides[last];
  let src = from.offset;
  let dst = to.offset;
  for (;;) {
    for (let i = 0, s = src, t = dst; i < inner; i++, s += inStep, t += outStep) {
      output[t] = input[s];
    }
    let d = last - 1;
    for (; d >= 0; d--) {
      index[d]++;
      src += from.strides[d];
      dst += to.strides[d];
      if (index[d] < shape[d]) break;
      src -= from.strides[d] * shape[d];
      dst -= to.strides[d] * shape[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

/** Pads each dimension with `before[d]` and `after[d]` elements of `value`. */
export function pad(
  input: ReadonlyNumbers,
  shape: readonly number[],
  before: readonly number[],
  value: number,
  output: Numbers,
  outputShape: readonly number[],
): void {
  for (let i = 0; i < output.length; i++) output[i] = value;
  const outStrides = rowMajorStrides(outputShape);
  let offset = 0;
  for (let d = 0; d < shape.length; d++) offset += before[d] * outStrides[d];
  copyStrided(shape, input, { offset: 0, strides: rowMajorStrides(shape) }, output, {
    offset,
    strides: outStrides,
  });
}

/** output[i0, .., in] = input[.. i_k at dim perm[k] ..]: output dim k is input dim perm[k]. */
export function transpose(
  input: ReadonlyNumbers,
  shape: readonly number[],
  perm: readonly number[],
  output: Numbers,
): void {
  const inStrides = rowMajorStrides(shape);
  const outShape = perm.map((p) => shape[p]);
  const outStrides = rowMajorStrides(outShape);
  const box = outShape.map((extent, d) => ({
    extent,
    from: inStrides[perm[d]],
    to: outStrides[d],
  }));
  // Any order of the box's dimensions copies the same elements; the walk costs most per
  // innermost run, so a long dimension goes innermost, contiguous ones preferred (NCHW ->
  // NHWC of an image then walks rows of W pixels, not runs of 3 channels).
  const score = (b: (typeof box)[number]) =>
    b.extent * (b.from === 1 ? 2 : 1) * (b.to === 1 ? 2 : 1);
  let inner = box.length - 1;
  for (let d = 0; d < box.length; d++) if (score(box[d]) > score(box[inner])) inner = d;
  box.push(...box.splice(inner, 1));
  copyStrided(
    box.map((b) => b.extent),
    input,
    { offset: 0, strides: box.map((b) => b.from) },
    output,
    { offset: 0, strides: box.map((b) => b.to) },
  );
}

/**
 * Copies elements begin[d] + i * step[d], i < counts[d], of each dimension into a dense
 * output (STRIDED_SLICE, SLICE, SPLIT).
 */
export function stridedSlice(
  input: ReadonlyNumbers,
  shape: readonly number[],
  window: { begin: readonly number[]; step: readonly number[]; counts: readonly number[] },
  output: Numbers,
): void {
  const strides = rowMajorStrides(shape);
  let offset = 0;
  for (let d = 0; d < shape.length; d++) offset += window.begin[d] * strides[d];
  copyStrided(
    window.counts,
    input,
    { offset, strides: strides.map((s, d) => s * window.step[d]) },
    output,
    { offset: 0, strides: rowMajorStrides(window.counts) },
  );
}

/**
 * Gathers slices along an axis: the input seen as outer x axis x inner, the output as
 * outer x indices x inner.
 */
export function gather(
  input: ReadonlyNumbers,
  sizes: { outer: number; axis: number; inner: number },
  indices: ReadonlyNumbers,
  output: Numbers,
): void {
  const { outer, axis, inner } = sizes;
  let t = 0;
  for (let o = 0; o < outer; o++) {
    for (let i = 0; i < indices.length; i++) {
      const base = (o * axis + indices[i]) * inner;
      for (let k = 0; k < inner; k++) output[t++] = input[base + k];
    }
  }
}

/** Repeats the input `multiples[d]` times along each dimension. */
export function tile(
  input: ReadonlyNumbers,
  shape: readonly number[],
  multiples: readonly number[],
  output: Numbers,
): void {
  const rank = shape.length;
  const outShape = shape.map((s, d) => s * multiples[d]);
  const inStrides = rowMajorStrides(shape);
  const index = new Array<number>(rank).fill(0);
  for (let t = 0; t < output.length; t++) {
    let src = 0;
    for (let d = 0; d < rank; d++) src += (index[d] % shape[d]) * inStrides[d];
    output[t] = input[src];
    for (let d = rank - 1; d >= 0; d--) {
      if (++index[d] < outShape[d]) break;
      index[d] = 0;
    }
  }
}

/** Extents of an NHWC image. */
export interface BatchImage {
  batches: number;
  height: number;
  width: number;
  depth: number;
}

/**
 * SPACE_TO_BATCH_ND on NHWC data: pads height/width (`padding` = top, bottom, left, right)
 * with `value`, then moves each block offset (dy, dx) into batch (dy * bw + dx) * batches + b.
 */
export function spaceToBatch(
  input: ReadonlyNumbers,
  dims: BatchImage,
  block: readonly [number, number],
  padding: readonly [number, number, number, number],
  value: number,
  output: Numbers,
): void {
  const [bh, bw] = block;
  const { batches, height, width, depth } = dims;
  const outH = (height + padding[0] + padding[1]) / bh;
  const outW = (width + padding[2] + padding[3]) / bw;
  let t = 0;
  for (let ob = 0; ob < batches * bh * bw; ob++) {
    const b = ob % batches;
    const offset = Math.floor(ob / batches);
    const dy = Math.floor(offset / bw);
    const dx = offset % bw;
    for (let y = 0; y < outH; y++) {
      const iy = y * bh + dy - padding[0];
      for (let x = 0; x < outW; x++) {
        const ix = x * bw + dx - padding[2];
        const inside = iy >= 0 && iy < height && ix >= 0 && ix < width;
        const base = ((b * height + iy) * width + ix) * depth;
        for (let c = 0; c < depth; c++) output[t++] = inside ? input[base + c] : value;
      }
    }
  }
}

/** BATCH_TO_SPACE_ND on NHWC data (no cropping): the inverse move of {@link spaceToBatch}. */
export function batchToSpace(
  input: ReadonlyNumbers,
  dims: BatchImage,
  block: readonly [number, number],
  output: Numbers,
): void {
  const [bh, bw] = block;
  const { height, width, depth } = dims;
  const outBatches = dims.batches / (bh * bw);
  const outH = height * bh;
  const outW = width * bw;
  let t = 0;
  for (let b = 0; b < outBatches; b++) {
    for (let y = 0; y < outH; y++) {
      for (let x = 0; x < outW; x++) {
        const ib = ((y % bh) * bw + (x % bw)) * outBatches + b;
        const base = ((ib * height + Math.floor(y / bh)) * width + Math.floor(x / bw)) * depth;
        for (let c = 0; c < depth; c++) output[t++] = input[base + c];
      }
    }
  }
}

/**
 * CHANNEL_SHUFFLE along an axis of `groups * k` channels (outer x channels x inner):
 * output channel j * groups + g = input channel g * k + j.
 */
export function channelShuffle(
  input: ReadonlyNumbers,
  sizes: { outer: number; axis: number; inner: number },
  groups: number,
  output: Numbers,
): void {
  const { outer, axis, inner } = sizes;
  const k = axis / groups;
  copyStrided(
    [outer, k, groups, inner],
    input,
    { offset: 0, strides: [axis * inner, inner, k * inner, 1] },
    output,
    { offset: 0, strides: [axis * inner, groups * inner, inner, 1] },
  );
}

/**
 * Copies the elements unchanged (RESHAPE, SQUEEZE, EXPAND_DIMS: only the shape changes):
 * nothing to do when the arena placed both at the same bytes, a block copy between typed
 * arrays of one kind, else element by element.
 */
export function copyElements(input: ReadonlyNumbers, output: Numbers): void {
  if (ArrayBuffer.isView(input) && ArrayBuffer.isView(output)) {
    if (input.buffer === output.buffer && input.byteOffset === output.byteOffset) return;
    if (input.constructor === output.constructor && input.length === output.length) {
      (output as Float32Array).set(input as Float32Array);
      return;
    }
  }
  for (let i = 0; i < output.length; i++) output[i] = input[i];
}
