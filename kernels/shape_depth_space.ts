/**
 * DEPTH_TO_SPACE and SPACE_TO_DEPTH kernels (TFLite `DepthToSpace` / `SpaceToDepth` as NNAPI
 * calls them), for NHWC or NCHW data: pure element moves, so every element type is exact.
 */
import { type ImageDims, imageIndex } from "./image_layout.ts";
import type { Numbers } from "./typed_arrays.ts";

/**
 * Moves depth blocks into space: output[b, y, x, c] = input[b, y / s, x / s,
 * ((y % s) * s + x % s) * outDepth + c] with outDepth = depth / s^2.
 */
export function depthToSpace(
  input: ArrayLike<number>,
  dims: ImageDims,
  blockSize: number,
  nchw: boolean,
  output: Numbers,
): void {
  const out: ImageDims = {
    batches: dims.batches,
    height: dims.height * blockSize,
    width: dims.width * blockSize,
    depth: dims.depth / (blockSize * blockSize),
  };
  const from = imageIndex(dims, nchw);
  const to = imageIndex(out, nchw);
  for (let b = 0; b < out.batches; b++) {
    for (let y = 0; y < out.height; y++) {
      for (let x = 0; x < out.width; x++) {
        const offset = ((y % blockSize) * blockSize + (x % blockSize)) * out.depth;
        const inY = Math.floor(y / blockSize);
        const inX = Math.floor(x / blockSize);
        for (let c = 0; c < out.depth; c++) {
          output[to(b, y, x, c)] = input[from(b, inY, inX, offset + c)];
        }
      }
    }
  }
}

/**
 * Moves space blocks into depth: output[b, y, x, ((dy * s) + dx) * depth + c] =
 * input[b, y * s + dy, x * s + dx, c].
 */
export function spaceToDepth(
  input: ArrayLike<number>,
  dims: ImageDims,
  blockSize: number,
  nchw: boolean,
  output: Numbers,
): void {
  const out: ImageDims = {
    batches: dims.batches,
    height: dims.height / blockSize,
    width: dims.width / blockSize,
    depth: dims.depth * blockSize * blockSize,
  };
  const from = imageIndex(dims, nchw);
  const to = imageIndex(out, nchw);
  for (let b = 0; b < dims.batches; b++) {
    for (let y = 0; y < dims.height; y++) {
      for (let x = 0; x < dims.width; x++) {
        const outY = Math.floor(y / blockSize);
        const outX = Math.floor(x / blockSize);
        const offset = ((y % blockSize) * blockSize + (x % blockSize)) * dims.depth;
        for (let c = 0; c < dims.depth; c++) {
          output[to(b, outY, outX, offset + c)] = input[from(b, y, x, c)];
        }
      }
    }
  }
}
