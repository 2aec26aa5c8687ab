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
import { f32RoiAlignNhwc, type RoiAlignParams, u8RoiAlignNhwc } from "../../kernels/roi_align.ts";
import { toFloat32, withFloat32Outputs } from "../../kernels/typed_arrays.ts";
import { elementCount, type Tensor } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { imageDims, imageShape, nhwcData, writeNhwc } from "./common/layout.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, scalarOf, scalarValue } from "./operation.ts";

const INPUT = 0;
const ROIS = 1;
const BATCHES = 2;
const OUT_HEIGHT = 3;
const OUT_WIDTH = 4;
const HEIGHT_STRIDE = 5;
const WIDTH_STRIDE = 6;
const HEIGHT_RATIO = 7;
const WIDTH_RATIO = 8;
const LAYOUT = 9;

/** NNAPI's fixed quantization of TENSOR_QUANT16_ASYMM box coordinates. */
export const BOX_SCALE = 0.125;

function parameters(values: (position: number) => number): RoiAlignParams {
  return {
    outHeight: values(OUT_HEIGHT),
    outWidth: values(OUT_WIDTH),
    heightStride: values(HEIGHT_STRIDE),
    widthStride: values(WIDTH_STRIDE),
    heightSamplingRatio: values(HEIGHT_RATIO),
    widthSamplingRatio: values(WIDTH_RATIO),
  };
}

/** ROI_ALIGN (HAL 1.2). */
export const roiAlign: OperationDefinition<"ROI_ALIGN"> = {
  type: "ROI_ALIGN",

  validate(signature) {
    checkArity(signature, [10], 1);
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
      "INT32",
      "INT32",
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
    const nchw = scalarValue(inputs[LAYOUT], "layout (input 9)") !== 0;
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
    const p = parameters((i) => scalarValue(inputs[i], `input ${i}`));
    check(
      p.outHeight > 0 && p.outWidth > 0,
      `output height ${p.outHeight} and width ${p.outWidth} must be positive`,
    );
    check(
      p.heightStride > 0 && p.widthStride > 0,
      `height stride ${p.heightStride} and width stride ${p.widthStride} must be positive`,
    );
    check(
      p.heightSamplingRatio >= 0 && p.widthSamplingRatio >= 0,
      `sampling ratios ${p.heightSamplingRatio} and ${p.widthSamplingRatio} must not be negative`,
    );
    return [
      imageShape({ ...dims, batches: numRois, height: p.outHeight, width: p.outWidth }, nchw),
    ];
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
    check(
      bad < 0,
      `ROI ${bad} (batch ${batchIds[bad]}) is malformed: it must have a valid batch index ` +
        `and x1 <= x2, y1 <= y2 inside the image`,
    );
  },
};
