/**
 * HEATMAP_MAX_KEYPOINT (HAL 1.2): the most likely keypoint positions in per-box heatmaps
 * (NNAPI `HeatmapMaxKeypoint.cpp`). Inputs: 0 the heatmaps [numBoxes, size, size,
 * numKeypoints] (NHWC; NCHW when input 2 is true) of TENSOR_FLOAT32, TENSOR_FLOAT16 or
 * TENSOR_QUANT8_ASYMM, 1 the boxes [numBoxes, 4] as [x1, y1, x2, y2] (the heatmap's float
 * type, or TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0), 2 the NCHW flag (BOOL).
 * Outputs: 0 the scores [numBoxes, numKeypoints] (the heatmap's type), 1 the keypoints
 * [numBoxes, numKeypoints, 2] as (x, y) (the boxes' type; quant16: scale 0.125, zero 0).
 */
import { type BoxData, storeValues } from "../kernels/bbox.ts";
import { heatmapMaxKeypoint as keypointKernel } from "../kernels/heatmap_max_keypoint.ts";
import type { OperandType } from "../nnapi/types.ts";
import { boxFloats, checkBoxQuantization } from "./common/boxes.ts";
import { nhwcData, nhwcDims } from "./common/layout.ts";
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
  scalarOf,
  scalarValue,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const HEATMAP = { heatmap: 0, boxes: 1, layout: 2 } as const;

/** HEATMAP_MAX_KEYPOINT: two outputs, the keypoint scores and positions. */
export const heatmapMaxKeypoint: OperationDefinition<"HEATMAP_MAX_KEYPOINT"> = withSignedQuant8({
  type: "HEATMAP_MAX_KEYPOINT",
  validate(signature) {
    checkArity(signature, [3], 2);
    const heatmap = signature.inputs[HEATMAP.heatmap];
    checkInputType(heatmap, HEATMAP.heatmap, [
      "TENSOR_FLOAT32",
      "TENSOR_FLOAT16",
      "TENSOR_QUANT8_ASYMM",
    ]);
    const quant = heatmap.type === "TENSOR_QUANT8_ASYMM";
    const boxType: OperandType = quant ? "TENSOR_QUANT16_ASYMM" : heatmap.type;
    checkTypes(signature, [heatmap.type, boxType, "BOOL"], [heatmap.type, boxType]);
    checkRank(heatmap, "input 0", (r) => r === 4, "4");
    checkRank(signature.inputs[HEATMAP.boxes], "input 1", (r) => r === 2, "2");
    checkRank(signature.outputs[0], "output 0", (r) => r === 2, "2");
    checkRank(signature.outputs[1], "output 1", (r) => r === 3, "3");
    if (quant) {
      checkBoxQuantization(signature.inputs[HEATMAP.boxes], "input 1");
      checkBoxQuantization(signature.outputs[1], "output 1");
    }
    return "V1_2";
  },
  prepare(inputs) {
    const heatmap = inputs[HEATMAP.heatmap].shape;
    const boxes = inputs[HEATMAP.boxes].shape;
    check(heatmap.length === 4, `input 0 has rank ${heatmap.length}, expected 4`);
    check(boxes.length === 2, `input 1 has rank ${boxes.length}, expected 2`);
    const nchw = scalarValue(inputs[HEATMAP.layout], "layout (input 2)") !== 0;
    const [numBoxes, height, width, keypoints] = nhwcDims(heatmap, nchw);
    check(
      height === width && height >= 2,
      `input 0 [${heatmap.join(",")}] must have square heatmaps of at least 2x2`,
    );
    check(
      boxes[0] === numBoxes && boxes[1] === 4,
      `input 1 [${boxes.join(",")}] must be [${numBoxes}, 4]`,
    );
    return [[numBoxes, keypoints], [numBoxes, keypoints, 2]];
  },
  execute(inputs, outputs) {
    const heatmap = inputs[HEATMAP.heatmap];
    const nchw = scalarOf(inputs[HEATMAP.layout]) !== 0;
    const [boxes, size, , keypoints] = nhwcDims(heatmap.shape, nchw);
    const [scoreOut, keypointOut] = outputs;
    const scores = new Float32Array(boxes * keypoints);
    const positions = new Float32Array(boxes * keypoints * 2);
    const nhwc = { ...heatmap, data: nhwcData(heatmap, nchw) };
    const fault = keypointKernel(
      { heatmap: boxFloats(nhwc), boxes: boxFloats(inputs[HEATMAP.boxes]) },
      { boxes, size, keypoints, tolerance: heatmap.type === "TENSOR_FLOAT16" ? 1e-3 : 1e-5 },
      { scores, keypoints: positions },
    );
    if (fault !== undefined) throw new OperationError(fault);
    storeValues(scores, scoreOut.data as BoxData, scoreOut);
    storeValues(positions, keypointOut.data as BoxData, keypointOut);
  },
});
