/**
 * BOX_WITH_NMS_LIMIT (HAL 1.2, NNAPI GenerateProposals.cpp): per-class non-maximum
 * suppression of detection boxes with a score threshold and a detection limit. Inputs:
 * 0 scores [numRois, numClasses] (TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM),
 * 1 boxes [numRois, numClasses * 4] as x1, y1, x2, y2 (same float type; TENSOR_QUANT16_ASYMM
 * with scale 0.125 and zero point 0 for quant8), 2 batch index per box (TENSOR_INT32, boxes of
 * a batch consecutive), 3 score threshold, 4 max detections per image (INT32, < 0 = all),
 * 5 NMS kernel (INT32: 0 hard, 1 linear, 2 gaussian), 6 IoU threshold, 7 gaussian sigma,
 * 8 NMS score threshold (FLOAT32; FLOAT16 for float16). Outputs: 0 kept scores, 1 kept boxes
 * [n, 4], 2 their classes, 3 their batch indices (TENSOR_INT32). The output count n depends
 * on the data, so the outputs are shaped only once every input value is known.
 */
import { batchGroups, boxNms, type BoxNmsParams, type NmsKernel } from "../kernels/box_nms.ts";
import { roundHalfAwayFromZero } from "../kernels/fixed_point.ts";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { boxFloats, checkBoxQuantization } from "./common/boxes.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import type { OperationDefinition, PrepareInput } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, scalarValue, tensorValue } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const SCORES = 0;
const BOXES = 1;
const BATCHES = 2;
const SCORE_THRESHOLD = 3;
const MAX_DETECTIONS = 4;
const KERNEL = 5;
const IOU_THRESHOLD = 6;
const SIGMA = 7;
const NMS_SCORE_THRESHOLD = 8;

const KERNELS: readonly NmsKernel[] = ["hard", "linear", "gaussian"];

/** What the NMS reads: shapes, data and quantization of inputs 0-2 and the scalars. */
interface NmsInput {
  type: OperandType;
  shape: readonly number[];
  scale: number;
  zeroPoint: number;
  data: TensorData;
}

/** Runs the NMS on the inputs; throws on malformed boxes or an unknown kernel. */
function runNms(tensors: readonly NmsInput[], scalar: (position: number) => number) {
  const [scores, boxes, batches] = tensors;
  const numClasses = scores.shape[1];
  const kernelCode = scalar(KERNEL);
  const kernel = KERNELS[kernelCode];
  check(
    kernel !== undefined,
    `NMS kernel (input ${KERNEL}) is ${kernelCode}, expected 0 (hard), 1 (linear) or 2 (gaussian)`,
  );
  const params: BoxNmsParams = {
    scoreThreshold: scalar(SCORE_THRESHOLD),
    maxDetections: scalar(MAX_DETECTIONS),
    kernel,
    iouThreshold: scalar(IOU_THRESHOLD),
    sigma: scalar(SIGMA),
    nmsScoreThreshold: scalar(NMS_SCORE_THRESHOLD),
  };
  const boxValues = boxFloats(boxes);
  const batchIds = batches.data;
  // The reference checks the first `boxes` boxes of each batch's block (as it does).
  let offset = 0;
  for (const group of batchGroups(batchIds)) {
    for (let i = 0; i < group.boxes; i++) {
      const at = offset + 4 * i;
      check(
        boxValues[at] <= boxValues[at + 2] && boxValues[at + 1] <= boxValues[at + 3],
        `box ${group.firstBox + i} is malformed: expected x1 <= x2 and y1 <= y2`,
      );
    }
    offset += group.boxes * numClasses * 4;
  }
  return boxNms(boxFloats(scores), boxValues, batchIds, numClasses, params);
}

function checkShapes(inputs: readonly { shape: readonly number[] }[]): void {
  const [scores, boxes, batches] = inputs.map((input) => input.shape);
  check(scores.length === 2, `input ${SCORES} has rank ${scores.length}, expected 2`);
  check(boxes.length === 2, `input ${BOXES} has rank ${boxes.length}, expected 2`);
  check(batches.length === 1, `input ${BATCHES} has rank ${batches.length}, expected 1`);
  const [numRois, numClasses] = scores;
  check(numClasses > 1, `input ${SCORES} has ${numClasses} classes, expected more than 1`);
  check(
    boxes[0] === numRois && boxes[1] === 4 * numClasses,
    `input ${BOXES} is [${boxes.join(",")}], expected [${numRois},${4 * numClasses}]`,
  );
  check(
    batches[0] === numRois,
    `input ${BATCHES} has ${batches[0]} batch indices for ${numRois} boxes`,
  );
}

/** BOX_WITH_NMS_LIMIT (HAL 1.2); its output extents depend on the input values. */
export const boxWithNmsLimit: OperationDefinition<"BOX_WITH_NMS_LIMIT"> = withSignedQuant8({
  type: "BOX_WITH_NMS_LIMIT",

  validate(signature) {
    checkArity(signature, [9], 4);
    const scores = signature.inputs[SCORES];
    checkInputType(scores, SCORES, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"]);
    const quant = scores.type === "TENSOR_QUANT8_ASYMM";
    const boxType: OperandType = quant ? "TENSOR_QUANT16_ASYMM" : scores.type;
    const floatType = quant ? "FLOAT32" : floatScalarType(scores.type);
    checkTypes(
      signature,
      [
        scores.type,
        boxType,
        "TENSOR_INT32",
        floatType,
        "INT32",
        "INT32",
        floatType,
        floatType,
        floatType,
      ],
      [scores.type, boxType, "TENSOR_INT32", "TENSOR_INT32"],
    );
    checkRank(scores, `input ${SCORES}`, (r) => r === 2, "2");
    checkRank(signature.inputs[BOXES], `input ${BOXES}`, (r) => r === 2, "2");
    checkRank(signature.inputs[BATCHES], `input ${BATCHES}`, (r) => r === 1, "1");
    signature.outputs.forEach((output, i) =>
      checkRank(output, `output ${i}`, (r) => r === (i === 1 ? 2 : 1), i === 1 ? "2" : "1")
    );
    if (quant) {
      checkBoxQuantization(signature.inputs[BOXES], `input ${BOXES}`);
      checkBoxQuantization(signature.outputs[1], "output 1");
    }
    return "V1_2";
  },

  prepare(inputs) {
    checkShapes(inputs);
    const tensors = inputs.slice(0, 3).map((input: PrepareInput, i) => ({
      ...input,
      data: tensorValue(input, `input ${i}`),
    }));
    const { selected } = runNms(tensors, (i) => scalarValue(inputs[i], `input ${i}`));
    const n = selected.length;
    return [[n], [n, 4], [n], [n]];
  },

  execute(inputs: readonly Tensor[], outputs: readonly Tensor[]) {
    if (inputs[SCORES].shape[0] === 0 || outputs[0].shape[0] === 0) return;
    const tensors = inputs.slice(0, 3).map((t) => ({ ...t, data: t.data! }));
    const { selected, scores, groups } = runNms(tensors, (i) => Number(inputs[i].data![0]));
    const numClasses = inputs[SCORES].shape[1];
    const [scoresOut, boxesOut, classesOut, batchesOut] = outputs.map((o) => o.data!);
    const boxesIn = inputs[BOXES].data!;
    const batchIds = inputs[BATCHES].data!;
    const quant = outputs[0].type === "TENSOR_QUANT8_ASYMM";
    const { scale, zeroPoint } = outputs[0];
    let k = 0;
    for (const group of groups) {
      for (let j = 0; j < group.kept; j++, k++) {
        const index = selected[k];
        const score = scores[index];
        scoresOut[k] = quant
          ? Math.min(
            255,
            Math.max(0, roundHalfAwayFromZero(Math.fround(Math.fround(score / scale) + zeroPoint))),
          )
          : score;
        for (let c = 0; c < 4; c++) boxesOut[4 * k + c] = boxesIn[4 * index + c];
        classesOut[k] = index % numClasses;
        batchesOut[k] = batchIds[group.firstBox];
      }
    }
  },
});
