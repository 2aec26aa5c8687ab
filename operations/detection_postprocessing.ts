/**
 * DETECTION_POSTPROCESSING (HAL 1.2): SSD box decoding and non-maximum suppression
 * (NNAPI `GenerateProposals.cpp`, TFLite's detection_postprocess). Inputs: 0 the scores
 * [batches, numAnchors, numClasses], 1 the deltas [batches, numAnchors, boxEncoding >= 4]
 * as [dy, dx, dh, dw, ...], 2 the anchors [numAnchors, 4] as [yCenter, xCenter, h, w]
 * (TENSOR_FLOAT32 or TENSOR_FLOAT16), 3-6 the y, x, h and w delta scales (FLOAT32/FLOAT16,
 * positive), 7 regular (multi-class) NMS instead of fast NMS (BOOL), 8 the maximum
 * detections, 9 the classes per detection (fast NMS), 10 the detections per class (regular
 * NMS) (INT32, positive where used), 11 the score threshold and 12 the IoU threshold
 * (FLOAT32/FLOAT16, not negative), 13 whether class 0 (the background) counts as a label
 * (BOOL). Outputs: 0 the scores [batches, numDetections], 1 the boxes [batches,
 * numDetections, 4] as [y1, x1, y2, x2], 2 the labels [batches, numDetections]
 * (TENSOR_INT32), 3 the detections per batch [batches] (TENSOR_INT32); numDetections is
 * the maximum detections (times the classes per detection for fast NMS), unused slots 0.
 */
import { detectionPostprocess } from "../kernels/bbox.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const DETECTION = {
  scores: 0,
  deltas: 1,
  anchors: 2,
  scaleY: 3,
  scaleX: 4,
  scaleH: 5,
  scaleW: 6,
  regularNms: 7,
  maxDetections: 8,
  maxClassesPerDetection: 9,
  maxPerClass: 10,
  scoreThreshold: 11,
  iouThreshold: 12,
  backgroundInLabel: 13,
} as const;

/** Detection slots per batch: the maximum detections, times the classes per detection. */
function slotsPerBatch(inputs: readonly PrepareInput[]): number {
  const scalar = (i: number) => scalarValue(inputs[i], `input ${i}`);
  for (const i of [DETECTION.scaleY, DETECTION.scaleX, DETECTION.scaleH, DETECTION.scaleW]) {
    check(scalar(i) > 0, `input ${i} is delta scale ${scalar(i)}, expected a positive one`);
  }
  for (const i of [DETECTION.scoreThreshold, DETECTION.iouThreshold]) {
    check(scalar(i) >= 0, `input ${i} is threshold ${scalar(i)}, expected at least 0`);
  }
  const maxDetections = scalar(DETECTION.maxDetections);
  check(maxDetections > 0, `input 8 is maximum detections ${maxDetections}, expected > 0`);
  if (scalar(DETECTION.regularNms) !== 0) {
    const perClass = scalar(DETECTION.maxPerClass);
    check(perClass > 0, `input 10 is detections per class ${perClass}, expected > 0`);
    return maxDetections;
  }
  const perDetection = scalar(DETECTION.maxClassesPerDetection);
  check(perDetection > 0, `input 9 is classes per detection ${perDetection}, expected > 0`);
  return maxDetections * perDetection;
}

/** DETECTION_POSTPROCESSING: four outputs, scores, boxes, labels and detection counts. */
export const detectionPostprocessing: OperationDefinition<"DETECTION_POSTPROCESSING"> = {
  type: "DETECTION_POSTPROCESSING",
  validate(signature) {
    checkArity(signature, [14], 4);
    const scores = signature.inputs[DETECTION.scores];
    checkInputType(scores, DETECTION.scores, ["TENSOR_FLOAT32", "TENSOR_FLOAT16"]);
    const t = scores.type;
    const float: OperandType = floatScalarType(t);
    checkTypes(
      signature,
      [
        t,
        t,
        t,
        float,
        float,
        float,
        float,
        "BOOL",
        "INT32",
        "INT32",
        "INT32",
        float,
        float,
        "BOOL",
      ],
      [t, t, "TENSOR_INT32", "TENSOR_INT32"],
    );
    [3, 3, 2].forEach((rank, i) =>
      checkRank(signature.inputs[i], `input ${i}`, (r) => r === rank, String(rank))
    );
    [2, 3, 2, 1].forEach((rank, i) =>
      checkRank(signature.outputs[i], `output ${i}`, (r) => r === rank, String(rank))
    );
    return "V1_2";
  },
  prepare(inputs) {
    const [scores, deltas, anchors] = inputs.slice(0, 3).map((input) => input.shape);
    [3, 3, 2].forEach((rank, i) => {
      const shape = inputs[i].shape;
      check(shape.length === rank, `input ${i} has rank ${shape.length}, expected ${rank}`);
    });
    const [batches, numAnchors, classes] = scores;
    check(classes > 1, `input 0 [${scores.join(",")}] must have more than 1 class`);
    check(
      deltas[0] === batches && deltas[1] === numAnchors && deltas[2] >= 4,
      `input 1 [${deltas.join(",")}] must be [${batches}, ${numAnchors}, at least 4]`,
    );
    check(
      anchors[0] === numAnchors && anchors[1] === 4,
      `input 2 [${anchors.join(",")}] must be [${numAnchors}, 4]`,
    );
    const slots = slotsPerBatch(inputs);
    return [[batches, slots], [batches, slots, 4], [batches, slots], [batches]];
  },
  execute(inputs, outputs) {
    const [batches, anchors, classes] = inputs[DETECTION.scores].shape;
    const floats = (i: number) => toFloat32(inputs[i].data as FloatData);
    const scalar = (i: number) => scalarOf(inputs[i]);
    const [scoreOut, boxOut, classOut, countOut] = outputs;
    withFloat32Outputs(
      [scoreOut.data as FloatData, boxOut.data as FloatData],
      ([s, b]) =>
        detectionPostprocess(
          { scores: floats(0), deltas: floats(1), anchors: floats(2) },
          {
            batches,
            anchors,
            classes,
            boxEncoding: inputs[DETECTION.deltas].shape[2],
            scales: [
              scalar(DETECTION.scaleY),
              scalar(DETECTION.scaleX),
              scalar(DETECTION.scaleH),
              scalar(DETECTION.scaleW),
            ],
            regularNms: scalar(DETECTION.regularNms) !== 0,
            maxDetections: scalar(DETECTION.maxDetections),
            maxClassesPerDetection: scalar(DETECTION.maxClassesPerDetection),
            maxPerClass: scalar(DETECTION.maxPerClass),
            scoreThreshold: scalar(DETECTION.scoreThreshold),
            iouThreshold: scalar(DETECTION.iouThreshold),
            backgroundInLabel: scalar(DETECTION.backgroundInLabel) !== 0,
            slots: scoreOut.shape[1],
          },
          {
            scores: s,
            boxes: b,
            classes: classOut.data as Int32Array,
            detections: countOut.data as Int32Array,
          },
        ),
    );
  },
};
