/**
 * RESIZE_BILINEAR: bilinear resize of a 4-D image (NNAPI ResizeImageOps.cpp, TFLite reference
 * kernel, corners not aligned). Inputs: 0 the image (TENSOR_FLOAT32; TENSOR_FLOAT16 and
 * TENSOR_QUANT8_ASYMM since HAL 1.2), 1 output width and 2 output height (INT32; or, HAL 1.2,
 * FLOAT32 (FLOAT16 for a float16 image) scales of the input extents), 3 optional NCHW flag
 * (BOOL, HAL 1.2). Output [b, height, width, d] in the input's layout and quantization.
 */
import { resizeBilinear as resizeKernel } from "../../kernels/resize_bilinear.ts";
import { elementCount, type Tensor } from "../../nnapi/tensor.ts";
import { imageDims } from "./common/layout.ts";
import {
  RESIZE_IN,
  resizeIsNchw,
  resizeOutputShape,
  validateResizeOperands,
} from "./common/resize.ts";
import { check, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** RESIZE_BILINEAR (HAL 1.0 for float32 with INT32 sizes; other forms HAL 1.2). */
export const resizeBilinear: OperationDefinition<"RESIZE_BILINEAR"> = withSignedQuant8({
  type: "RESIZE_BILINEAR",

  validate(signature) {
    const count = signature.inputs.length;
    check(count === 3 || count === 4, `expected 3 or 4 inputs, got ${count}`);
    check(signature.outputs.length === 1, `expected 1 output, got ${signature.outputs.length}`);
    const scalarType = validateResizeOperands(signature);
    const v1_0 = signature.inputs[RESIZE_IN.input].type === "TENSOR_FLOAT32" &&
      scalarType === "INT32" && count === 3;
    return v1_0 ? "V1_0" : "V1_2";
  },

  prepare: (inputs) => [resizeOutputShape(inputs)],

  /** Four input taps per output element, whatever the scale. */
  cost: (_inputs, outputs) => 4 * elementCount(outputs[0].shape),

  execute(inputs: readonly Tensor[], outputs: readonly Tensor[]) {
    const nchw = resizeIsNchw(inputs);
    const output = outputs[0];
    const out = imageDims(output.shape, nchw);
    resizeKernel(
      inputs[RESIZE_IN.input].data!,
      imageDims(inputs[RESIZE_IN.input].shape, nchw),
      out.height,
      out.width,
      nchw,
      output.type === "TENSOR_QUANT8_ASYMM",
      output.data!,
    );
  },
});
