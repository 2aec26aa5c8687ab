/**
 * DEPTH_TO_SPACE: rearranges depth blocks of a 4-D image into spatial blocks (NNAPI
 * `depthToSpacePrepare` / `depthToSpaceGeneric`). Inputs: 0 the image (TENSOR_FLOAT32,
 * TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2), 1 block size s (INT32, >= 1, s^2
 * divides the depth), 2 optional NCHW flag (BOOL, HAL 1.2). Output [b, h*s, w*s, d/s^2] in
 * the input's layout, with the input's quantization.
 */
import { depthToSpace as depthToSpaceKernel } from "../kernels/shape_depth_space.ts";
import { imageShape } from "./common/layout.ts";
import {
  blockParameters,
  executeBlockRearrangement,
  validateBlockRearrangement,
} from "./common/space_depth.ts";
import { check, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** DEPTH_TO_SPACE (HAL 1.0; the NCHW flag or float16 need HAL 1.2). */
export const depthToSpace: OperationDefinition<"DEPTH_TO_SPACE"> = withSignedQuant8({
  type: "DEPTH_TO_SPACE",

  validate: validateBlockRearrangement,

  prepare(inputs) {
    const { blockSize, nchw, dims } = blockParameters(inputs);
    const area = blockSize * blockSize;
    check(
      dims.depth % area === 0,
      `input depth ${dims.depth} is not a multiple of the squared block size ${area}`,
    );
    return [
      imageShape({
        batches: dims.batches,
        height: dims.height * blockSize,
        width: dims.width * blockSize,
        depth: dims.depth / area,
      }, nchw),
    ];
  },

  execute(inputs, outputs) {
    executeBlockRearrangement(inputs, outputs, depthToSpaceKernel);
  },
});
