/**
 * AXIS_ALIGNED_BBOX_TRANSFORM (HAL 1.2): decodes per-class box deltas against regions of
 * interest and clips the boxes to their image (NNAPI `GenerateProposals.cpp`). Inputs: 0 the
 * rois [numRois, 4] as [x1, y1, x2, y2] (TENSOR_FLOAT32, TENSOR_FLOAT16, or
 * TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0), 1 the deltas
 * [numRois, numClasses * 4] as [dx, dy, dw, dh] (the rois' float type, or
 * TENSOR_QUANT8_ASYMM), 2 each roi's batch (TENSOR_INT32 [numRois]), 3 each batch's image
 * [height, width] ([numBatches, 2], of the rois' type).
 * Output [numRois, numClasses * 4] of the rois' type (quant16: scale 0.125, zero point 0).
 * Zero rois are allowed.
 */
import { bboxTransform, type BoxData, storeValues } from "../kernels/bbox.ts";
import type { OperandType } from "../nnapi/types.ts";
import { boxFloats, checkBoxQuantization } from "./common/boxes.ts";
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const BBOX = { rois: 0, deltas: 1, batches: 2, imageInfo: 3 } as const;

/** AXIS_ALIGNED_BBOX_TRANSFORM: one output, the decoded and clipped boxes. */
export const axisAlignedBboxTransform: OperationDefinition<"AXIS_ALIGNED_BBOX_TRANSFORM"> =
  withSignedQuant8({
    type: "AXIS_ALIGNED_BBOX_TRANSFORM",
    validate(signature) {
      checkArity(signature, [4], 1);
      const rois = signature.inputs[BBOX.rois];
      checkInputType(rois, BBOX.rois, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT16_ASYMM"]);
      const quant = rois.type === "TENSOR_QUANT16_ASYMM";
      const deltaType: OperandType = quant ? "TENSOR_QUANT8_ASYMM" : rois.type;
      checkTypes(signature, [rois.type, deltaType, "TENSOR_INT32", rois.type], [rois.type]);
      const ranks = [2, 2, 1, 2];
      signature.inputs.forEach((operand, i) =>
        checkRank(operand, `input ${i}`, (r) => r === ranks[i], String(ranks[i]))
      );
      checkRank(signature.outputs[0], "output 0", (r) => r === 2, "2");
      if (quant) {
        checkBoxQuantization(rois, "input 0");
        checkBoxQuantization(signature.inputs[BBOX.imageInfo], "input 3");
        checkBoxQuantization(signature.outputs[0], "output 0");
      }
      return "V1_2";
    },
    prepare(inputs) {
      const [rois, deltas, batches, imageInfo] = inputs.map((input) => input.shape);
      const ranks = [2, 2, 1, 2];
      [rois, deltas, batches, imageInfo].forEach((shape, i) =>
        check(
          shape.length === ranks[i],
          `input ${i} has rank ${shape.length}, expected ${ranks[i]}`,
        )
      );
      const numRois = rois[0];
      check(rois[1] === 4, `input 0 [${rois.join(",")}] must have 4 values per roi`);
      check(
        deltas[0] === numRois && deltas[1] > 0 && deltas[1] % 4 === 0,
        `input 1 [${deltas.join(",")}] must be [${numRois}, a positive multiple of 4]`,
      );
      check(batches[0] === numRois, `input 2 [${batches.join(",")}] must be [${numRois}]`);
      check(
        imageInfo[0] > 0 && imageInfo[1] === 2,
        `input 3 [${imageInfo.join(",")}] must be [numBatches > 0, 2]`,
      );
      return [[numRois, deltas[1]]];
    },
    execute(inputs, outputs) {
      const output = outputs[0];
      const [numRois, width] = output.shape;
      if (numRois === 0) return;
      const result = new Float32Array(numRois * width);
      const fault = bboxTransform(
        {
          rois: boxFloats(inputs[BBOX.rois]),
          deltas: boxFloats(inputs[BBOX.deltas]),
          batches: inputs[BBOX.batches].data as Int32Array,
          imageInfo: boxFloats(inputs[BBOX.imageInfo]),
        },
        { numRois, numClasses: width / 4, numBatches: inputs[BBOX.imageInfo].shape[0] },
        result,
      );
      if (fault !== undefined) throw new OperationError(fault);
      storeValues(result, output.data as BoxData, output);
    },
  });
