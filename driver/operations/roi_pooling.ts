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
import { roiPoolingNhwc } from "../../kernels/roi_pooling.ts";
import { elementCount, type Tensor } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { imageDims, imageShape, nhwcData, writeNhwc } from "./common/layout.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, scalarOf, scalarValue } from "./operation.ts";
import { BOX_SCALE } from "./roi_align.ts";

const INPUT = 0;
const ROIS = 1;
const BATCHES = 2;
const OUT_HEIGHT = 3;
const OUT_WIDTH = 4;
const HEIGHT_STRIDE = 5;
const WIDTH_STRIDE = 6;
const LAYOUT = 7;

/** ROI_POOLING (HAL 1.2). */
export const roiPooling: OperationDefinition<"ROI_POOLING"> = {
  type: "ROI_POOLING",

  validate(signature) {
    checkArity(signature, [8], 1);
    const input = signature.inputs[INPUT];
    checkInputType(input, INPUT, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"]);
    const quant = input.type === "TENSOR_QUANT8_ASYMM";
    const strideType = quant ? "FLOAT32" : floatScalarType(input.type);
    const expected: OperandType[] = [
      input.type,
      quant ? "TENSOR_QUANT16_ASYMM" : input.type,
      "TENSOR_INT32",
      "INT32",
      "INT32",
      strideType,
      strideType,
      "BOOL",
    ];
    checkTypes(signature, expected, [input.type]);
    checkRank(input, `input ${INPUT}`, (r) => r === 4, "4");
    checkRank(signature.inputs[ROIS], `input ${ROIS}`, (r) => r === 2, "2");
    checkRank(signature.inputs[BATCHES], `input ${BATCHES}`, (r) => r === 1, "1");
    checkRank(signature.outputs[0], "output 0", (r) => r === 4, "4");
    if (quant) {
      const rois = signature.inputs[ROIS];
      check(
        rois.scale === BOX_SCALE && rois.zeroPoint === 0,
        `input ${ROIS} (operand ${rois.index}) has scale ${rois.scale} and zero point ` +
          `${rois.zeroPoint}, expected 0.125 and 0`,
      );
      checkSameQuantization(input, signature.outputs[0]);
    }
    return "V1_2";
  },

  prepare(inputs) {
    const shape = inputs[INPUT].shape;
    const roiShape = inputs[ROIS].shape;
    const batchShape = inputs[BATCHES].shape;
    check(shape.length === 4, `input ${INPUT} has rank ${shape.length}, expected 4`);
    check(roiShape.length === 2, `input ${ROIS} has rank ${roiShape.length}, expected 2`);
    check(batchShape.length === 1, `input ${BATCHES} has rank ${batchShape.length}, expected 1`);
    const nchw = scalarValue(inputs[LAYOUT], "layout (input 7)") !== 0;
    const dims = imageDims(shape, nchw);
    check(
      dims.batches > 0 && dims.height > 0 && dims.width > 0 && dims.depth > 0,
      `input ${INPUT} [${shape.join(",")}] has an empty dimension`,
    );
    const numRois = roiShape[0];
    check(roiShape[1] === 4, `input ${ROIS} has ${roiShape[1]} values per ROI, expected 4`);
    check(
      batchShape[0] === numRois,
      `input ${BATCHES} has ${batchShape[0]} batch indices for ${numRois} ROIs`,
    );
    const height = scalarValue(inputs[OUT_HEIGHT], "output height (input 3)");
    const width = scalarValue(inputs[OUT_WIDTH], "output width (input 4)");
    const heightStride = scalarValue(inputs[HEIGHT_STRIDE], "height stride (input 5)");
    const widthStride = scalarValue(inputs[WIDTH_STRIDE], "width stride (input 6)");
    check(height > 0 && width > 0, `output height ${height} and width ${width} must be positive`);
    check(
      heightStride > 0 && widthStride > 0,
      `height stride ${heightStride} and width stride ${widthStride} must be positive`,
    );
    return [imageShape({ ...dims, batches: numRois, height, width }, nchw)];
  },

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
      heightStride: scalarOf(inputs[HEIGHT_STRIDE]),
      widthStride: scalarOf(inputs[WIDTH_STRIDE]),
      emptyValue: quant ? input.zeroPoint : 0,
    };
    const data = nhwcData(input, nchw);
    const batchIds = inputs[BATCHES].data!;
    let bad = -1;
    writeNhwc(output, nchw, (outData) => {
      bad = roiPoolingNhwc(data, dims, roiValues, batchIds, params, outData);
    });
    check(
      bad < 0,
      `ROI ${bad} (batch ${batchIds[bad]}) is malformed: it must have a valid batch index ` +
        `and x1 <= x2, y1 <= y2 inside the image`,
    );
  },
};
