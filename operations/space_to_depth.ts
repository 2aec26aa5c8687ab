/**
 * SPACE_TO_DEPTH: rearranges spatial blocks of a 4-D image into depth (NNAPI
 * `spaceToDepthPrepare` / `spaceToDepthGeneric`). Inputs: 0 the image (TENSOR_FLOAT32,
 * TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2), 1 block size s (INT32, >= 1,
 * dividing height and width), 2 optional NCHW flag (BOOL, HAL 1.2). Output
 * [b, h/s, w/s, d*s^2] in the input's layout, with the input's quantization.
 */
import { spaceToDepth as spaceToDepthKernel } from "../kernels/shape_depth_space.ts";
import { imageShape } from "./common/layout.ts";
import {
  blockParameters,
  executeBlockRearrangement,
  validateBlockRearrangement,
} from "./common/space_depth.ts";
import { check, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** SPACE_TO_DEPTH (HAL 1.0; the NCHW flag or float16 need HAL 1.2). */
export const spaceToDepth: OperationDefinition<"SPACE_TO_DEPTH"> = withSignedQuant8({
  type: "SPACE_TO_DEPTH",

  validate: validateBlockRearrangement,

  prepare(inputs) {
    const { blockSize, nchw, dims } = blockParameters(inputs);
    check(
      dims.height % blockSize === 0 && dims.width % blockSize === 0,
      `input height ${dims.height} and width ${dims.width} must be multiples of the block size ${blockSize}`,
    );
    return [
      imageShape({
        batches: dims.batches,
        height: dims.height / blockSize,
        width: dims.width / blockSize,
        depth: dims.depth * blockSize * blockSize,
      }, nchw),
    ];
  },

  execute(inputs, outputs) {
    executeBlockRearrangement(inputs, outputs, spaceToDepthKernel);
  },
});
