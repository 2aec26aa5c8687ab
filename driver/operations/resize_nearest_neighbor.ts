/**
 * RESIZE_NEAREST_NEIGHBOR (HAL 1.2): nearest-neighbor resize of a 4-D image (NNAPI
 * ResizeImageOps.cpp, TFLite reference kernel, corners not aligned). Inputs: 0 the image
 * (TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM), 1 output width and 2 output height
 * (INT32; or FLOAT32 (FLOAT16 for a float16 image) scales of the input extents), 3 optional
 * NCHW flag (BOOL). Output [b, height, width, d] in the input's layout and quantization.
 */
import { resizeNearestNeighbor as resizeKernel } from "../../kernels/resize_nearest_neighbor.ts";
import { imageDims } from "./common/layout.ts";
import {
  RESIZE_IN,
  resizeIsNchw,
  resizeOutputShape,
  validateResizeOperands,
} from "./common/resize.ts";
import { checkArity, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RESIZE_NEAREST_NEIGHBOR definition (every form is HAL 1.2). */
export const resizeNearestNeighbor: OperationDefinition<"RESIZE_NEAREST_NEIGHBOR"> =
  withSignedQuant8({
    type: "RESIZE_NEAREST_NEIGHBOR",

    validate(signature) {
      checkArity(signature, [3, 4], 1);
      validateResizeOperands(signature);
      return "V1_2";
    },

    prepare: (inputs) => [resizeOutputShape(inputs)],

    execute(inputs, outputs) {
      const nchw = resizeIsNchw(inputs);
      const output = outputs[0];
      const out = imageDims(output.shape, nchw);
      resizeKernel(
        inputs[RESIZE_IN.input].data!,
        imageDims(inputs[RESIZE_IN.input].shape, nchw),
        out.height,
        out.width,
        nchw,
        output.data!,
      );
    },
  });
