/**
 * RESIZE_BILINEAR: bilinear resize of a 4-D image (NNAPI ResizeImageOps.cpp, TFLite reference
 * kernel, corners not aligned). Inputs: 0 the image (TENSOR_FLOAT32; TENSOR_FLOAT16 and
 * TENSOR_QUANT8_ASYMM since HAL 1.2), 1 output width and 2 output height (INT32; or, HAL 1.2,
 * FLOAT32 (FLOAT16 for a float16 image) scales of the input extents), 3 optional NCHW flag
 * (BOOL, HAL 1.2). Output [b, height, width, d] in the input's layout and quantization.
 */
import { resizeBilinear as resizeKernel } from "../../kernels/resize_bilinear.ts";
import { elementCount, type Tensor } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import { imageDims, imageShape } from "./common/layout.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkRank, checkTypes, scalarOf, scalarValue } from "./operation.ts";

const INPUT = 0;
const WIDTH = 1;
const HEIGHT = 2;
const LAYOUT = 3;

/** An output extent: the INT32 size itself, or floor(inSize * scale) in float32. */
function outputExtent(type: OperandType, value: number, inSize: number): number {
  return type === "INT32" ? value : Math.floor(Math.fround(inSize * Math.fround(value)));
}

/** RESIZE_BILINEAR (HAL 1.0 for float32 with INT32 sizes; other forms HAL 1.2). */
export const resizeBilinear: OperationDefinition<"RESIZE_BILINEAR"> = {
  type: "RESIZE_BILINEAR",

  validate(signature) {
    const count = signature.inputs.length;
    check(count === 3 || count === 4, `expected 3 or 4 inputs, got ${count}`);
    check(signature.outputs.length === 1, `expected 1 output, got ${signature.outputs.length}`);
    const input = signature.inputs[INPUT];
    const scalarType = signature.inputs[HEIGHT].type;
    checkInputType(input, INPUT, ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"]);
    let version: HalVersion = input.type === "TENSOR_FLOAT32" ? "V1_0" : "V1_2";
    if (scalarType !== "INT32") {
      version = "V1_2";
      const scaleType = floatScalarType(input.type);
      check(
        scalarType === scaleType,
        `input ${HEIGHT} (operand ${
          signature.inputs[HEIGHT].index
        }) has type ${scalarType}, expected INT32 or ${scaleType}`,
      );
    }
    const expected: OperandType[] = [input.type, scalarType, scalarType];
    if (count === 4) {
      expected.push("BOOL");
      version = "V1_2";
    }
    checkTypes(signature, expected, [input.type]);
    checkRank(input, `input ${INPUT}`, (r) => r === 4, "4");
    const output = signature.outputs[0];
    checkRank(output, "output 0", (r) => r === 4, "4");
    if (input.type === "TENSOR_QUANT8_ASYMM") checkSameQuantization(input, output, INPUT);
    return version;
  },

  prepare(inputs) {
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
    return [imageShape({ ...dims, height, width }, nchw)];
  },

  /** Four input taps per output element, whatever the scale. */
  cost: (_inputs, outputs) => 4 * elementCount(outputs[0].shape),

  execute(inputs: readonly Tensor[], outputs: readonly Tensor[]) {
    const nchw = inputs.length > LAYOUT && scalarOf(inputs[LAYOUT]) !== 0;
    const output = outputs[0];
    const out = imageDims(output.shape, nchw);
    resizeKernel(
      inputs[INPUT].data!,
      imageDims(inputs[INPUT].shape, nchw),
      out.height,
      out.width,
      nchw,
      output.type === "TENSOR_QUANT8_ASYMM",
      output.data!,
    );
  },
};
