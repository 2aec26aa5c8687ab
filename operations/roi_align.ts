/**
 * ROI_ALIGN (HAL 1.2, NNAPI RoiAlign.cpp): crops each region of interest of a 4-D feature
 * map into an out-height x out-width image by averaging bilinear samples. Inputs: 0 the
 * feature map (TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM), 1 the ROIs
 * [numRois, 4] as x1, y1, x2, y2 in image coordinates (same float type; TENSOR_QUANT16_ASYMM
 * with scale 0.125 and zero point 0 for quant8), 2 the batch index of each ROI (TENSOR_INT32
 * [numRois]), 3 output height, 4 output width (INT32), 5 height and 6 width stride from the
 * image to the map (FLOAT32; FLOAT16 for float16), 7 height and 8 width sampling ratio (INT32,
 * 0 = adaptive), 9 NCHW flag (BOOL). Output [numRois, outHeight, outWidth, depth] in the
 * input's layout; zero ROIs give a zero-sized output.
 */
import { f32RoiAlignNhwc, type RoiAlignParams, u8RoiAlignNhwc } from "../kernels/roi_align.ts";
import { toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import { elementCount, type Tensor } from "../nnapi/tensor.ts";
import { checkRoisWellFormed, ROI_IN, roiOutputShape, validateRoiInputs } from "./common/boxes.ts";
import { imageDims, nhwcData, writeNhwc } from "./common/layout.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, scalarOf, scalarValue } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const { input: INPUT, rois: ROIS, batches: BATCHES } = ROI_IN;
const HEIGHT_RATIO = 7;
const WIDTH_RATIO = 8;
const LAYOUT = 9;

function parameters(values: (position: number) => number): RoiAlignParams {
  return {
    outHeight: values(ROI_IN.outHeight),
    outWidth: values(ROI_IN.outWidth),
    heightStride: values(ROI_IN.heightStride),
    widthStride: values(ROI_IN.widthStride),
    heightSamplingRatio: values(HEIGHT_RATIO),
    widthSamplingRatio: values(WIDTH_RATIO),
  };
}

/** ROI_ALIGN (HAL 1.2). */
export const roiAlign: OperationDefinition<"ROI_ALIGN"> = withSignedQuant8({
  type: "ROI_ALIGN",

  validate(signature) {
    checkArity(signature, [10], 1);
    validateRoiInputs(signature, ["INT32", "INT32", "BOOL"]);
    return "V1_2";
  },

  prepare(inputs) {
    const shape = roiOutputShape(inputs, LAYOUT);
    const heightRatio = scalarValue(inputs[HEIGHT_RATIO], `input ${HEIGHT_RATIO}`);
    const widthRatio = scalarValue(inputs[WIDTH_RATIO], `input ${WIDTH_RATIO}`);
    check(
      heightRatio >= 0 && widthRatio >= 0,
      `sampling ratios ${heightRatio} and ${widthRatio} must not be negative`,
    );
    return [shape];
  },

  /** Four taps per sample; sampling ratios are at most the bin extent when adaptive. */
  cost: (inputs, outputs) => 16 * elementCount(outputs[0].shape) + elementCount(inputs[0].shape),

  execute(inputs: readonly Tensor[], outputs: readonly Tensor[]) {
    const rois = inputs[ROIS];
    const output = outputs[0];
    if (rois.shape[0] === 0) return;
    const nchw = scalarOf(inputs[LAYOUT]) !== 0;
    const input = inputs[INPUT];
    const dims = imageDims(input.shape, nchw);
    const params = parameters((i) => scalarOf(inputs[i]));
    const batchIds = inputs[BATCHES].data!;
    const data = nhwcData(input, nchw);
    let bad = -1;
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      const quantization = {
        inputScale: input.scale,
        inputZeroPoint: input.zeroPoint,
        outputScale: output.scale,
        outputZeroPoint: output.zeroPoint,
        roiScale: rois.scale,
      };
      writeNhwc(output, nchw, (out) => {
        bad = u8RoiAlignNhwc(data, dims, rois.data!, batchIds, params, quantization, out);
      });
    } else {
      const floats = toFloat32(data as Float32Array | Float16Array);
      const roiValues = toFloat32(rois.data as Float32Array | Float16Array);
      writeNhwc(output, nchw, (out) => {
        withFloat32Outputs([out as Float32Array | Float16Array], ([staged]) => {
          bad = f32RoiAlignNhwc(floats, dims, roiValues, batchIds, params, staged);
        });
      });
    }
    checkRoisWellFormed(bad, batchIds);
  },
});
