/**
 * What the operations on boxes share (ROI_ALIGN, ROI_POOLING, BOX_WITH_NMS_LIMIT,
 * AXIS_ALIGNED_BBOX_TRANSFORM, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT): NNAPI fixes the
 * quantization of TENSOR_QUANT16_ASYMM box coordinates, and ROI_ALIGN and ROI_POOLING take
 * the same feature map, ROIs, batch indices, output size and strides at inputs 0-6.
 */
import { type BoxData, floatValues } from "../../kernels/bbox.ts";
import type { Tensor, TensorData } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import {
  check,
  checkRank,
  checkTypes,
  type DeclaredOperand,
  type OperationSignature,
  type PrepareInput,
  scalarValue,
} from "../operation.ts";
import { imageDims, imageShape } from "./layout.ts";
import { checkInputType, floatScalarType } from "./operand_types.ts";

/** NNAPI's fixed quantization of TENSOR_QUANT16_ASYMM box coordinates: scale 0.125, zero 0. */
export const BOX_SCALE = 0.125;

/** Checks a quant16 box operand has NNAPI's fixed box quantization; `what` names it. */
export function checkBoxQuantization(operand: DeclaredOperand, what: string): void {
  check(
    operand.scale === BOX_SCALE && operand.zeroPoint === 0,
    `${what} (operand ${operand.index}) has scale ${operand.scale} and zero point ` +
      `${operand.zeroPoint}, expected 0.125 and 0`,
  );
}

/** A tensor's values as float32: dequantized for quant8/quant16, widened for float16. */
export function boxFloats(tensor: Pick<Tensor, "data" | "scale" | "zeroPoint">): Float32Array {
  return floatValues(tensor.data as BoxData, tensor.scale, tensor.zeroPoint);
}

/** ROI_ALIGN's and ROI_POOLING's shared input positions. */
export const ROI_IN = {
  input: 0,
  rois: 1,
  batches: 2,
  outHeight: 3,
  outWidth: 4,
  heightStride: 5,
  widthStride: 6,
} as const;

/**
 * Validates inputs 0-6 of ROI_ALIGN or ROI_POOLING and the output; `trailing` are the types
 * of the operation's own inputs after them. Returns whether the input is quantized.
 */
export function validateRoiInputs(
  signature: OperationSignature,
  trailing: readonly OperandType[],
): boolean {
  const input = signature.inputs[ROI_IN.input];
  checkInputType(input, ROI_IN.input, [
    "TENSOR_FLOAT32",
    "TENSOR_FLOAT16",
    "TENSOR_QUANT8_ASYMM",
  ]);
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
    ...trailing,
  ];
  checkTypes(signature, expected, [input.type]);
  checkRank(input, `input ${ROI_IN.input}`, (r) => r === 4, "4");
  checkRank(signature.inputs[ROI_IN.rois], `input ${ROI_IN.rois}`, (r) => r === 2, "2");
  checkRank(signature.inputs[ROI_IN.batches], `input ${ROI_IN.batches}`, (r) => r === 1, "1");
  checkRank(signature.outputs[0], "output 0", (r) => r === 4, "4");
  if (quant) checkBoxQuantization(signature.inputs[ROI_IN.rois], `input ${ROI_IN.rois}`);
  return quant;
}

/**
 * Checks inputs 0-6 of ROI_ALIGN or ROI_POOLING at preparation (`layout` is the position of
 * the NCHW flag) and returns the output shape: one out-height x out-width image per ROI.
 */
export function roiOutputShape(inputs: readonly PrepareInput[], layout: number): number[] {
  const { input, rois, batches } = ROI_IN;
  const shape = inputs[input].shape;
  const roiShape = inputs[rois].shape;
  const batchShape = inputs[batches].shape;
  check(shape.length === 4, `input ${input} has rank ${shape.length}, expected 4`);
  check(roiShape.length === 2, `input ${rois} has rank ${roiShape.length}, expected 2`);
  check(batchShape.length === 1, `input ${batches} has rank ${batchShape.length}, expected 1`);
  const nchw = scalarValue(inputs[layout], `layout (input ${layout})`) !== 0;
  const dims = imageDims(shape, nchw);
  check(
    dims.batches > 0 && dims.height > 0 && dims.width > 0 && dims.depth > 0,
    `input ${input} [${shape.join(",")}] has an empty dimension`,
  );
  const numRois = roiShape[0];
  check(roiShape[1] === 4, `input ${rois} has ${roiShape[1]} values per ROI, expected 4`);
  check(
    batchShape[0] === numRois,
    `input ${batches} has ${batchShape[0]} batch indices for ${numRois} ROIs`,
  );
  const height = scalarValue(inputs[ROI_IN.outHeight], "output height (input 3)");
  const width = scalarValue(inputs[ROI_IN.outWidth], "output width (input 4)");
  const heightStride = scalarValue(inputs[ROI_IN.heightStride], "height stride (input 5)");
  const widthStride = scalarValue(inputs[ROI_IN.widthStride], "width stride (input 6)");
  check(height > 0 && width > 0, `output height ${height} and width ${width} must be positive`);
  check(
    heightStride > 0 && widthStride > 0,
    `height stride ${heightStride} and width stride ${widthStride} must be positive`,
  );
  return imageShape({ ...dims, batches: numRois, height, width }, nchw);
}

/** Fails an execution whose kernel reported ROI `bad` (>= 0) malformed. */
export function checkRoisWellFormed(bad: number, batchIds: TensorData): void {
  check(
    bad < 0,
    `ROI ${bad} (batch ${batchIds[bad]}) is malformed: it must have a valid batch index ` +
      `and x1 <= x2, y1 <= y2 inside the image`,
  );
}
