/**
 * What RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR share (NNAPI ResizeImageOps.cpp): the
 * operands (image, output width and height as INT32 sizes or float scales, optional NCHW
 * flag, HAL 1.3's optional align_corners and half_pixel_centers flags), their HAL versions,
 * and the output-size rule.
 */
import type { Tensor, TensorData } from "../../nnapi/tensor.ts";
import type { ResizeGeometry } from "../../kernels/resize_bilinear.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
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
export const RESIZE_IN = {
  input: 0,
  width: 1,
  height: 2,
  layout: 3,
  alignCorners: 4,
  halfPixelCenters: 5,
} as const;

/** An output extent: the INT32 size itself, or floor(inSize * scale) in float32. */
function outputExtent(type: OperandType, value: number, inSize: number): number {
  return type === "INT32" ? value : Math.floor(Math.fround(inSize * Math.fround(value)));
}

/**
 * The HAL version of a resize form that has passed {@link validateResizeOperands}: V1_3 with
 * align_corners or half_pixel_centers (5 or 6 inputs), else V1_2 (V1_0 for float32 images
 * sized by INT32 without the layout flag: `v1_0` says whether the operation has that form).
 */
export function resizeVersion(
  signature: OperationSignature,
  options: { v1_0: boolean },
): HalVersion {
  const count = signature.inputs.length;
  if (count > RESIZE_IN.layout + 1) return "V1_3";
  const original = options.v1_0 && count === 3 &&
    signature.inputs[RESIZE_IN.input].type === "TENSOR_FLOAT32" &&
    signature.inputs[RESIZE_IN.height].type === "INT32";
  return original ? "V1_0" : "V1_2";
}

/** Whether an optional flag input is present, known (constant or executing) and true. */
function knownTrue(input: { value?: TensorData | null } | undefined): boolean {
  return input?.value ? Number(input.value[0]) !== 0 : false;
}

/** NNAPI: "If half_pixel_centers is True, then align_corners must be False". */
function checkFlagsCompatible(
  alignCorners: boolean,
  halfPixelCenters: boolean,
  names = ["align_corners (input 4)", "half_pixel_centers (input 5)"],
): void {
  check(
    !(alignCorners && halfPixelCenters),
    `${names[0]} and ${names[1]} are both true; half-pixel centers need align_corners false`,
  );
}

/**
 * Checks a resize's operand types, ranks and quantization (after its arity, 3 to 6 inputs);
 * returns the type of the size operands, INT32 or the image's float scalar type.
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
  while (expected.length < signature.inputs.length) expected.push("BOOL");
  checkTypes(signature, expected, [input.type]);
  const { alignCorners: ALIGN, halfPixelCenters: HALF } = RESIZE_IN;
  const [align, half] = [signature.inputs[ALIGN], signature.inputs[HALF]];
  checkFlagsCompatible(knownTrue(align), knownTrue(half), [
    `align_corners (input ${ALIGN}, operand ${align?.index})`,
    `half_pixel_centers (input ${HALF}, operand ${half?.index})`,
  ]);
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
  // The flags do not change the shape; one known only at execution is checked there.
  checkFlagsCompatible(
    knownTrue(inputs[RESIZE_IN.alignCorners]),
    knownTrue(inputs[RESIZE_IN.halfPixelCenters]),
  );
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

/** An executing resize's geometry: extents, layout and the (optional) coordinate flags. */
export function resizeGeometry(inputs: readonly Tensor[], output: Tensor): ResizeGeometry {
  const flag = (position: number) => inputs.length > position && scalarOf(inputs[position]) !== 0;
  const nchw = flag(RESIZE_IN.layout);
  const alignCorners = flag(RESIZE_IN.alignCorners);
  const halfPixelCenters = flag(RESIZE_IN.halfPixelCenters);
  checkFlagsCompatible(alignCorners, halfPixelCenters);
  const out = imageDims(output.shape, nchw);
  return {
    dims: imageDims(inputs[RESIZE_IN.input].shape, nchw),
    outHeight: out.height,
    outWidth: out.width,
    nchw,
    alignCorners,
    halfPixelCenters,
  };
}
