/**
 * DEPTH_TO_SPACE and SPACE_TO_DEPTH kernels (TFLite `DepthToSpace` / `SpaceToDepth` as NNAPI
 * calls them), for NHWC or NCHW data: pure element moves, so every element type is exact.
 */
import { type ImageDims, imageIndex } from "./image_layout.ts";
import type { Numbers } from "./typed_arrays.ts";

/**
 * Pairs every element of the "space" image (extents `space`) with its place in the "depth"
 * image of blocks `blockSize` x `blockSize`: element (b, y, x, c) of the space image is
 * element (b, y / s, x / s, ((y % s) * s + x % s) * depth + c) of the depth image. Visits
 * the space image in NHWC order; both images use the same layout.
 */
function forEachBlockElement(
  space: ImageDims,
  blockSize: number,
  nchw: boolean,
  visit: (spaceIndex: number, depthIndex: number) => void,
): void {
  const depth: ImageDims = {
    batches: space.batches,
    height: space.height / blockSize,
    width: space.width / blockSize,
    depth: space.depth * blockSize * blockSize,
  };
  const spaceAt = imageIndex(space, nchw);
  const depthAt = imageIndex(depth, nchw);
  for (let b = 0; b < space.batches; b++) {
    for (let y = 0; y < space.height; y++) {
      for (let x = 0; x < space.width; x++) {
        const offset = ((y % blockSize) * blockSize + (x % blockSize)) * space.depth;
        const depthY = Math.floor(y / blockSize);
        const depthX = Math.floor(x / blockSize);
        for (let c = 0; c < space.depth; c++) {
          visit(spaceAt(b, y, x, c), depthAt(b, depthY, depthX, offset + c));
        }
      }
    }
  }
}

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
  const space: ImageDims = {
    batches: dims.batches,
    height: dims.height * blockSize,
    width: dims.width * blockSize,
    depth: dims.depth / (blockSize * blockSize),
  };
  forEachBlockElement(space, blockSize, nchw, (s, d) => {
    output[s] = input[d];
  });
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
  forEachBlockElement(dims, blockSize, nchw, (s, d) => {
    output[d] = input[s];
  });
}
