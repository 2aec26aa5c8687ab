/**
 * GENERATE_PROPOSALS (HAL 1.2): region proposals from anchor scores and box deltas, as in
 * Faster R-CNN's proposal layer (NNAPI `GenerateProposals.cpp`). Inputs: 0 the scores
 * [batches, height, width, numAnchors] and 1 the deltas [batches, height, width,
 * numAnchors * 4] (NHWC; NCHW when input 10 is true), 2 the anchors [numAnchors, 4] as
 * [x1, y1, x2, y2], 3 each batch's image [height, width], 4/5 the height and width strides
 * of the feature map, 6/7 the maximum proposals before and after NMS (INT32; not positive /
 * negative: no limit), 8 the NMS IoU threshold, 9 the minimum box size, 10 the NCHW flag
 * (BOOL). Types: TENSOR_FLOAT32 (FLOAT32 scalars), TENSOR_FLOAT16 (FLOAT16 scalars), or
 * TENSOR_QUANT8_ASYMM scores and deltas with TENSOR_QUANT16_SYMM anchors and
 * TENSOR_QUANT16_ASYMM image sizes (scale 0.125; FLOAT32 scalars). Outputs: 0 the scores
 * [numRois] (input 0's type), 1 the boxes [numRois, 4] (quant: TENSOR_QUANT16_ASYMM, scale
 * 0.125, zero point 0), 2 each box's batch (TENSOR_INT32 [numRois]). numRois depends on the
 * data, so the output shapes are known only at execution.
 */
import {
  type BoxData,
  floatValues,
  generateProposals as proposalKernel,
  type Proposals,
  storeValues,
} from "../kernels/bbox.ts";
import { nchwToNhwc } from "../kernels/image_layout.ts";
import type { TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { checkBoxQuantization } from "./common/boxes.ts";
import { nhwcDims } from "./common/layout.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
  type PrepareInput,
  scalarValue,
  tensorValue,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const PROPOSALS = {
  scores: 0,
  deltas: 1,
  anchors: 2,
  imageInfo: 3,
  heightStride: 4,
  widthStride: 5,
  preNmsTopN: 6,
  postNmsTopN: 7,
  iouThreshold: 8,
  minSize: 9,
  layout: 10,
} as const;

/** Float32 values of a tensor input in NHWC order. */
function nhwcFloats(input: PrepareInput, data: TensorData, nchw: boolean): Float32Array {
  const values = floatValues(data as BoxData, input.scale, input.zeroPoint);
  if (!nchw) return values;
  const [n, c, h, w] = input.shape;
  const out = new Float32Array(values.length);
  nchwToNhwc(values, out, n, c, h, w);
  return out;
}

/** Checks the operand shapes; returns the NHWC extents of the score map. */
function checkShapes(inputs: readonly PrepareInput[], nchw: boolean): number[] {
  const shapes = inputs.slice(0, 4).map((input) => input.shape);
  const ranks = [4, 4, 2, 2];
  shapes.forEach((shape, i) =>
    check(shape.length === ranks[i], `input ${i} has rank ${shape.length}, expected ${ranks[i]}`)
  );
  const [scores, deltas, anchors, imageInfo] = shapes;
  const [batches, height, width, numAnchors] = nhwcDims(scores, nchw);
  const expected = [batches, height, width, numAnchors * 4];
  check(
    nhwcDims(deltas, nchw).every((d, i) => d === expected[i]),
    `input 1 [${deltas.join(",")}] does not match the scores [${scores.join(",")}]`,
  );
  check(
    anchors[0] === numAnchors && anchors[1] === 4,
    `input 2 [${anchors.join(",")}] must be [${numAnchors}, 4]`,
  );
  check(
    imageInfo[0] === batches && imageInfo[1] === 2,
    `input 3 [${imageInfo.join(",")}] must be [${batches}, 2]`,
  );
  return [batches, height, width, numAnchors];
}

/** Runs the proposal kernel on inputs whose values are known (else ValueNotYetKnown). */
function propose(inputs: readonly PrepareInput[]): Proposals {
  const nchw = scalarValue(inputs[PROPOSALS.layout], "layout (input 10)") !== 0;
  const [batches, height, width, anchors] = checkShapes(inputs, nchw);
  const scalar = (i: number) => scalarValue(inputs[i], `input ${i}`);
  const params = {
    batches,
    height,
    width,
    anchors,
    heightStride: scalar(PROPOSALS.heightStride),
    widthStride: scalar(PROPOSALS.widthStride),
    preNmsTopN: scalar(PROPOSALS.preNmsTopN),
    postNmsTopN: scalar(PROPOSALS.postNmsTopN),
    iouThreshold: scalar(PROPOSALS.iouThreshold),
    minSize: scalar(PROPOSALS.minSize),
  };
  const data = [0, 1, 2, 3].map((i) => tensorValue(inputs[i], `input ${i}`));
  const result = proposalKernel({
    scores: nhwcFloats(inputs[0], data[0], nchw),
    deltas: nhwcFloats(inputs[1], data[1], nchw),
    anchors: nhwcFloats(inputs[2], data[2], false),
    imageInfo: nhwcFloats(inputs[3], data[3], false),
  }, params);
  if (typeof result === "string") throw new OperationError(result);
  return result;
}

/** GENERATE_PROPOSALS: three outputs, the proposals' scores, boxes and batches. */
export const generateProposals: OperationDefinition<"GENERATE_PROPOSALS"> = withSignedQuant8({
  type: "GENERATE_PROPOSALS",
  validate(signature) {
    checkArity(signature, [11], 3);
    const scores = signature.inputs[PROPOSALS.scores];
    checkInputType(scores, PROPOSALS.scores, [
      "TENSOR_FLOAT32",
      "TENSOR_FLOAT16",
      "TENSOR_QUANT8_ASYMM",
    ]);
    const quant = scores.type === "TENSOR_QUANT8_ASYMM";
    const float: OperandType = quant ? "FLOAT32" : floatScalarType(scores.type);
    const anchorType: OperandType = quant ? "TENSOR_QUANT16_SYMM" : scores.type;
    const boxType: OperandType = quant ? "TENSOR_QUANT16_ASYMM" : scores.type;
    const expected: OperandType[] = [scores.type, scores.type, anchorType, boxType, float, float];
    expected.push("INT32", "INT32", float, float, "BOOL");
    checkTypes(signature, expected, [scores.type, boxType, "TENSOR_INT32"]);
    const ranks = [4, 4, 2, 2];
    ranks.forEach((rank, i) =>
      checkRank(signature.inputs[i], `input ${i}`, (r) => r === rank, String(rank))
    );
    [1, 2, 1].forEach((rank, i) =>
      checkRank(signature.outputs[i], `output ${i}`, (r) => r === rank, String(rank))
    );
    if (quant) {
      checkBoxQuantization(signature.inputs[PROPOSALS.anchors], "input 2");
      checkBoxQuantization(signature.inputs[PROPOSALS.imageInfo], "input 3");
      checkBoxQuantization(signature.outputs[1], "output 1");
    }
    return "V1_2";
  },
  /** Runs the whole operation: the number of proposals depends on the data. */
  prepare(inputs) {
    const count = propose(inputs).scores.length;
    return [[count], [count, 4], [count]];
  },
  execute(inputs, outputs) {
    const result = propose(inputs.map((t) => ({ ...t, value: t.data })));
    const [scores, boxes, batches] = outputs;
    storeValues(result.scores, scores.data as BoxData, scores);
    storeValues(result.rois, boxes.data as BoxData, boxes);
    (batches.data as Int32Array).set(result.batches);
  },
});
