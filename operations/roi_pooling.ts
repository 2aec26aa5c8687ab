/**
 * ROI_POOLING (HAL 1.2, NNAPI RoiPooling.cpp): max-pools each region of interest of a 4-D
 * feature map into an out-height x out-width image. Inputs: 0 the feature map
 * (TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM), 1 the ROIs [numRois, 4] as x1, y1,
 * x2, y2 in image coordinates (same float type; TENSOR_QUANT16_ASYMM with scale 0.125 and
 * zero point 0 for quant8), 2 the batch index of each ROI (TENSOR_INT32 [numRois]),
 * 3 output height, 4 output width (INT32), 5 height and 6 width stride from the image to the
 * map (FLOAT32; FLOAT16 for float16), 7 NCHW flag (BOOL). Output [numRois, outHeight,
 * outWidth, depth] in the input's layout and quantization.
 */
import { roiPoolingNhwc } from "../kernels/roi_pooling.ts";
import { elementCount, type Tensor } from "../nnapi/tensor.ts";
import { checkRoisWellFormed, ROI_IN, roiOutputShape, validateRoiInputs } from "./common/boxes.ts";
import { imageDims, nhwcData, writeNhwc } from "./common/layout.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { checkArity, scalarOf } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const { input: INPUT, rois: ROIS, batches: BATCHES } = ROI_IN;
const LAYOUT = 7;

/** ROI_POOLING (HAL 1.2). */
export const roiPooling: OperationDefinition<"ROI_POOLING"> = withSignedQuant8({
  type: "ROI_POOLING",

  validate(signature) {
    checkArity(signature, [8], 1);
    const quant = validateRoiInputs(signature, ["BOOL"]);
    if (quant) checkSameQuantization(signature.inputs[INPUT], signature.outputs[0]);
    return "V1_2";
  },

  prepare: (inputs) => [roiOutputShape(inputs, LAYOUT)],

  /** Each input cell is read about once per ROI covering it; bounded by the ROI count. */
  cost: (inputs, outputs) => elementCount(outputs[0].shape) + elementCount(inputs[0].shape),

  execute(inputs: readonly Tensor[], outputs: readonly Tensor[]) {
    const rois = inputs[ROIS];
    if (rois.shape[0] === 0) return;
    const nchw = scalarOf(inputs[LAYOUT]) !== 0;
    const input = inputs[INPUT];
    const output = outputs[0];
    const dims = imageDims(input.shape, nchw);
    const out = imageDims(output.shape, nchw);
    const quant = input.type === "TENSOR_QUANT8_ASYMM";
    const roiData = rois.data!;
    const roiValues = new Float32Array(roiData.length);
    for (let i = 0; i < roiData.length; i++) {
      roiValues[i] = quant ? (Number(roiData[i]) - rois.zeroPoint) * rois.scale : roiData[i];
    }
    const params = {
      outHeight: out.height,
      outWidth: out.width,
      heightStride: scalarOf(inputs[ROI_IN.heightStride]),
      widthStride: scalarOf(inputs[ROI_IN.widthStride]),
      emptyValue: quant ? input.zeroPoint : 0,
    };
    const data = nhwcData(input, nchw);
    const batchIds = inputs[BATCHES].data!;
    let bad = -1;
    writeNhwc(output, nchw, (outData) => {
      bad = roiPoolingNhwc(data, dims, roiValues, batchIds, params, outData);
    });
    checkRoisWellFormed(bad, batchIds);
  },
});
