/**
 * RESIZE_NEAREST_NEIGHBOR: nearest-neighbor resize of a 4-D image (NNAPI ResizeImageOps.cpp).
 * Inputs: 0 the image, 1 output width and 2 output height (INT32 sizes, or float scales of
 * the input extents: FLOAT16 for a float16 image, else FLOAT32), 3 NCHW flag (BOOL), 4
 * optional align_corners and 5 optional half_pixel_centers (BOOL, not both true). Output
 * [b, height, width, d] in the input's layout and quantization. Forms: TENSOR_FLOAT32,
 * TENSOR_FLOAT16 and TENSOR_QUANT8_ASYMM (V1_2); TENSOR_QUANT8_ASYMM_SIGNED and 5 or 6
 * inputs (V1_3).
 */
import { resizeNearestNeighbor as resizeKernel } from "../kernels/resize_nearest_neighbor.ts";
import {
  RESIZE_IN,
  resizeGeometry,
  resizeOutputShape,
  resizeVersion,
  validateResizeOperands,
} from "./common/resize.ts";
import { checkArity, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RESIZE_NEAREST_NEIGHBOR; copies elements, so every type runs the same kernel. */
export const resizeNearestNeighbor: OperationDefinition<"RESIZE_NEAREST_NEIGHBOR"> =
  withSignedQuant8({
    type: "RESIZE_NEAREST_NEIGHBOR",

    validate(signature) {
      checkArity(signature, [3, 4, 5, 6], 1);
      validateResizeOperands(signature);
      return resizeVersion(signature, { v1_0: false });
    },

    prepare: (inputs) => [resizeOutputShape(inputs)],

    execute(inputs, outputs) {
      const output = outputs[0];
      resizeKernel(inputs[RESIZE_IN.input].data!, output.data!, resizeGeometry(inputs, output));
    },
  });
