/**
 * RESIZE_BILINEAR: bilinear resize of a 4-D image (NNAPI ResizeImageOps.cpp, TFLite reference
 * kernel). Inputs: 0 the image, 1 output width and 2 output height (INT32 sizes, or float
 * scales of the input extents: FLOAT16 for a float16 image, else FLOAT32), 3 optional NCHW
 * flag (BOOL), 4 optional align_corners and 5 optional half_pixel_centers (BOOL, not both
 * true). Output [b, height, width, d] in the input's layout and quantization. Forms:
 * TENSOR_FLOAT32 with INT32 sizes and 3 inputs (V1_0); TENSOR_FLOAT16, TENSOR_QUANT8_ASYMM,
 * scales and the layout flag (V1_2); TENSOR_QUANT8_ASYMM_SIGNED and 5 or 6 inputs (V1_3).
 */
import { resizeBilinear as resizeKernel } from "../kernels/resize_bilinear.ts";
import { elementCount } from "../nnapi/tensor.ts";
import {
  RESIZE_IN,
  resizeGeometry,
  resizeOutputShape,
  resizeVersion,
  validateResizeOperands,
} from "./common/resize.ts";
import { checkArity, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RESIZE_BILINEAR; signed quant8 runs the uint8 kernel on shifted values. */
export const resizeBilinear: OperationDefinition<"RESIZE_BILINEAR"> = withSignedQuant8({
  type: "RESIZE_BILINEAR",

  validate(signature) {
    checkArity(signature, [3, 4, 5, 6], 1);
    validateResizeOperands(signature);
    return resizeVersion(signature, { v1_0: true });
  },

  prepare: (inputs) => [resizeOutputShape(inputs)],

  /** Four input taps per output element, whatever the scale. */
  cost: (_inputs, outputs) => 4 * elementCount(outputs[0].shape),

  execute(inputs, outputs) {
    const output = outputs[0];
    resizeKernel(inputs[RESIZE_IN.input].data!, output.data!, {
      ...resizeGeometry(inputs, output),
      quantized: output.type === "TENSOR_QUANT8_ASYMM",
    });
  },
});
