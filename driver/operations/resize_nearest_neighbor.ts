/**
 * RESIZE_NEAREST_NEIGHBOR (HAL 1.2): nearest-neighbor resize of a 4-D image (NNAPI
 * ResizeImageOps.cpp, TFLite reference kernel, corners not aligned). Inputs: 0 the image
 * (TENSOR_FLOAT32, TENSOR_FLOAT16 or TENSOR_QUANT8_ASYMM), 1 output width and 2 output height
 * (INT32; or FLOAT32 (FLOAT16 for a float16 image) scales of the input extents), 3 optional
 * NCHW flag (BOOL). Output [b, height, width, d] in the input's layout and quantization.
 */
import { resizeNearestNeighbor as resizeKernel } from "../../kernels/resize_nearest_neighbor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { imageDims, imageShape } from "./common/layout.ts";
import { checkInputType, floatScalarType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, scalarOf, scalarValue } from "./operation.ts";

const INPUT = 0;
const WIDTH = 1;
const HEIGHT = 2;
const LAYOUT = 3;

/** An output extent: the INT32 size itself, or floor(inSize * scale) in float32. */
function outputExtent(type: OperandType, value: number, inSize: number): number {
  return type === "INT32" ? value : Math.floor(Math.fround(inSize * Math.fround(value)));
}

/** RESIZE_NEAREST_NEIGHBOR definition (every form is HAL 1.2). */
export const resizeNearestNeighbor: OperationDefinition<"RESIZE_NEAREST_NEIGHBOR"> = {
  type: "RESIZE_NEAREST_NEIGHBOR",

  validate(signature) {
    checkArity(signature, [3, 4], 1);
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
    return "V1_2";
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

  execute(inputs, outputs) {
    const nchw = inputs.length > LAYOUT && scalarOf(inputs[LAYOUT]) !== 0;
    const output = outputs[0];
    const out = imageDims(output.shape, nchw);
    resizeKernel(
      inputs[INPUT].data!,
      imageDims(inputs[INPUT].shape, nchw),
      out.height,
      out.width,
      nchw,
      output.data!,
    );
  },
};
