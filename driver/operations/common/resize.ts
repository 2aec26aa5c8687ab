/**
 * What RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR share (NNAPI ResizeImageOps.cpp): the
 * operands (image, output width and height as INT32 sizes or float scales, optional NCHW
 * flag) and the output-size rule.
 */
import type { Tensor } from "../../../nnapi/tensor.ts";
import type { OperandType } from "../../../nnapi/types.ts";
import {
  check,
  checkRank,
  checkTypes,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "../operation.ts";
import { imageDims, imageShape } from "./layout.ts";
import { checkInputType, floatScalarType } from "./operand_types.ts";
import { checkSameQuantization } from "./quantization.ts";

/** Input positions. */
export const RESIZE_IN = { input: 0, width: 1, height: 2, layout: 3 } as const;

/** An output extent: the INT32 size itself, or floor(inSize * scale) in float32. */
function outputExtent(type: OperandType, value: number, inSize: number): number {
  return type === "INT32" ? value : Math.floor(Math.fround(inSize * Math.fround(value)));
}

/**
 * Checks a resize's operand types, ranks and quantization (after its arity); returns the
 * type of the size operands, INT32 or the image's float scalar type.
 */
export function validateResizeOperands(signature: OperationSignature): OperandType {
  const { input: INPUT, height: HEIGHT } = RESIZE_IN;
  const input = signature.inputs[INPUT];
  checkInputType(input, INPUT, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"]);
  const scalarType = signature.inputs[HEIGHT].type;
  if (scalarType !== "INT32") {
    const scaleType = floatScalarType(input.type);
    check(
      scalarType === scaleType,
      `input ${HEIGHT} (operand ${
        signature.inputs[HEIGHT].index
      }) has type ${scalarType}, expected INT32 or ${scaleType}`,
    );
  }
  const expected: OperandType[] = [input.type, scalarType, scalarType];
  if (signature.inputs.length === 4) expected.push("BOOL");
  checkTypes(signature, expected, [input.type]);
  checkRank(input, `input ${INPUT}`, (r) => r === 4, "4");
  const output = signature.outputs[0];
  checkRank(output, "output 0", (r) => r === 4, "4");
  if (input.type === "TENSOR_QUANT8_ASYMM") checkSameQuantization(input, output, INPUT);
  return scalarType;
}

/** The resized image's shape, in the input's layout. */
export function resizeOutputShape(inputs: readonly PrepareInput[]): number[] {
  const { input: INPUT, width: WIDTH, height: HEIGHT, layout: LAYOUT } = RESIZE_IN;
  const shape = inputs[INPUT].shape;
  check(shape.length === 4, `input ${INPUT} has rank ${shape.length}, expected 4`);
  const nchw = inputs.length > LAYOUT && scalarValue(inputs[LAYOUT], "layout (input 3)") !== 0;
  const dims = imageDims(shape, nchw);
  check(
    dims.height > 0 && dims.width > 0 && dims.depth > 0,
    `input ${INPUT} [${shape.join(",")}] has an empty height, width or depth`,
  );
  const type = inputs[HEIGHT].type;
  const height = outputExtent(type, scalarValue(inputs[HEIGHT], "height (input 2)"), dims.height);
  const width = outputExtent(type, scalarValue(inputs[WIDTH], "width (input 1)"), dims.width);
  check(height > 0 && width > 0, `output height ${height} and width ${width} must be positive`);
  return imageShape({ ...dims, height, width }, nchw);
}

/** Whether an executing resize's image is NCHW (the flag is optional). */
export function resizeIsNchw(inputs: readonly Tensor[]): boolean {
  return inputs.length > RESIZE_IN.layout && scalarOf(inputs[RESIZE_IN.layout]) !== 0;
}
