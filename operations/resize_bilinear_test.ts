import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";
import { resizeBilinear } from "./resize_bilinear.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, scalarType: OperandType, layout: boolean) {
  return {
    type: "RESIZE_BILINEAR" as const,
    inputs: [
      declared(type, [1, 2, 2, 1], 0),
      declared(scalarType, [], 1),
      declared(scalarType, [], 2),
      ...(layout ? [declared("BOOL", [], 3)] : []),
    ],
    outputs: [declared(type, [1, 3, 3, 1], 4)],
  };
}

function scalar(type: OperandType, v: number): PrepareInput {
  const value: TensorData = type === "INT32"
    ? new Int32Array([v])
    : type === "BOOL"
    ? new Uint8Array([v])
    : new Float32Array([v]);
  return { type, shape: [], scale: 0, zeroPoint: 0, value };
}

function inputs(shape: number[], width: PrepareInput, height: PrepareInput, nchw?: boolean) {
  return [
    { type: "TENSOR_FLOAT32" as const, shape, scale: 0, zeroPoint: 0, value: undefined },
    width,
    height,
    ...(nchw === undefined ? [] : [scalar("BOOL", nchw ? 1 : 0)]),
  ];
}

Deno.test("resizeBilinear.validate() is V1_0 only for float32 with INT32 sizes and no layout", () => {
  strictEqual(resizeBilinear.validate(signature("TENSOR_FLOAT32", "INT32", false)), "V1_0");
  strictEqual(resizeBilinear.validate(signature("TENSOR_FLOAT32", "INT32", true)), "V1_2");
  strictEqual(resizeBilinear.validate(signature("TENSOR_FLOAT32", "FLOAT32", false)), "V1_2");
  strictEqual(resizeBilinear.validate(signature("TENSOR_QUANT8_ASYMM", "INT32", false)), "V1_2");
  strictEqual(resizeBilinear.validate(signature("TENSOR_FLOAT16", "FLOAT16", false)), "V1_2");
  throws(
    () => resizeBilinear.validate(signature("TENSOR_FLOAT16", "FLOAT32", false)),
    OperationError,
  );
  throws(() => resizeBilinear.validate(signature("TENSOR_INT32", "INT32", false)), OperationError);
});

Deno.test("resizeBilinear.prepare() reads width (input 1) and height (input 2)", () => {
  const shape = resizeBilinear.prepare(
    inputs([1, 2, 2, 3], scalar("INT32", 5), scalar("INT32", 4)),
    [],
  );
  deepStrictEqual(shape, [[1, 4, 5, 3]]);
  const nchw = resizeBilinear.prepare(
    inputs([1, 3, 2, 2], scalar("INT32", 5), scalar("INT32", 4), true),
    [],
  );
  deepStrictEqual(nchw, [[1, 3, 4, 5]]);
});

Deno.test("resizeBilinear.prepare() scales the input extents by float scales, rounding down", () => {
  const shape = resizeBilinear.prepare(
    inputs([1, 3, 3, 1], scalar("FLOAT32", 1.8), scalar("FLOAT32", 1.5)),
    [],
  );
  deepStrictEqual(shape, [[1, 4, 5, 1]]);
});

Deno.test("resizeBilinear.prepare() rejects non-positive output sizes and non-4-D inputs", () => {
  throws(
    () => resizeBilinear.prepare(inputs([1, 2, 2, 1], scalar("INT32", 0), scalar("INT32", 3)), []),
    OperationError,
  );
  throws(
    () => resizeBilinear.prepare(inputs([2, 2, 1], scalar("INT32", 3), scalar("INT32", 3)), []),
    OperationError,
  );
});

/** A bool scalar declared as a constant (the coordinate flags usually are). */
function flag(value: boolean, index: number): DeclaredOperand {
  return {
    ...declared("BOOL", [], index),
    lifetime: "CONSTANT_COPY",
    value: Uint8Array.of(+value),
  };
}

/** RESIZE_BILINEAR with layout, align_corners and (optionally) half_pixel_centers inputs. */
function flagged(type: OperandType, flags: boolean[]) {
  const base = signature(type, "INT32", true);
  const declaredFlags = flags.map((f, k) => flag(f, 4 + k));
  return { ...base, inputs: [...base.inputs, ...declaredFlags] };
}

Deno.test("resizeBilinear.validate() is V1_3 with align_corners or half_pixel_centers inputs", () => {
  strictEqual(resizeBilinear.validate(flagged("TENSOR_FLOAT32", [false])), "V1_3");
  strictEqual(resizeBilinear.validate(flagged("TENSOR_FLOAT32", [true, false])), "V1_3");
  strictEqual(resizeBilinear.validate(flagged("TENSOR_FLOAT16", [false, true])), "V1_3");
  strictEqual(resizeBilinear.validate(flagged("TENSOR_QUANT8_ASYMM", [false, false])), "V1_3");
  strictEqual(resizeBilinear.validate(flagged("TENSOR_QUANT8_ASYMM_SIGNED", [true])), "V1_3");
  // The older forms keep their versions.
  strictEqual(resizeBilinear.validate(signature("TENSOR_FLOAT32", "INT32", true)), "V1_2");
  strictEqual(
    resizeBilinear.validate(signature("TENSOR_QUANT8_ASYMM_SIGNED", "INT32", true)),
    "V1_3",
  );
});

Deno.test("resizeBilinear.validate() names the flag operands at fault", () => {
  throws(
    () => resizeBilinear.validate(flagged("TENSOR_FLOAT32", [true, true])),
    /align_corners \(input 4, operand 4\) and half_pixel_centers \(input 5, operand 5\) are both true/,
  );
  const wrongType = flagged("TENSOR_FLOAT32", [false]);
  wrongType.inputs[4] = declared("INT32", [], 4);
  throws(
    () => resizeBilinear.validate(wrongType),
    /input 4 \(operand 4\) has type INT32, expected BOOL/,
  );
  const seven = flagged("TENSOR_FLOAT32", [false, false]);
  seven.inputs.push(flag(false, 6));
  throws(() => resizeBilinear.validate(seven), /got 7/);
});

Deno.test("resizeBilinear.prepare() rejects both flags once they are known", () => {
  const known = [...inputs([1, 2, 2, 1], scalar("INT32", 3), scalar("INT32", 3), false)];
  deepStrictEqual(
    resizeBilinear.prepare([...known, scalar("BOOL", 1), scalar("BOOL", 0)], []),
    [[1, 3, 3, 1]],
  );
  throws(
    () => resizeBilinear.prepare([...known, scalar("BOOL", 1), scalar("BOOL", 1)], []),
    /align_corners \(input 4\) and half_pixel_centers \(input 5\) are both true/,
  );
});

/** Runs RESIZE_BILINEAR on a 1x1xWx1 row of `values` to `outWidth`, with the given flags. */
function resizeRow(
  type: OperandType,
  values: TensorData,
  outWidth: number,
  flags: { alignCorners?: boolean; halfPixelCenters?: boolean },
): number[] {
  const quantization = type.startsWith("TENSOR_QUANT8") ? { scale: 0.5, zeroPoint: 0 } : {};
  const tensor = (shape: number[], data: TensorData): Tensor => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    ...quantization,
    data,
  });
  const bool = (v: boolean): Tensor => ({
    type: "BOOL",
    shape: [],
    scale: 0,
    zeroPoint: 0,
    data: Uint8Array.of(+v),
  });
  const int = (v: number): Tensor => ({
    type: "INT32",
    shape: [],
    scale: 0,
    zeroPoint: 0,
    data: Int32Array.of(v),
  });
  const Out = values.constructor as new (n: number) => TensorData;
  const output = tensor([1, 1, outWidth, 1], new Out(outWidth));
  resizeBilinear.execute([
    tensor([1, 1, values.length, 1], values),
    int(outWidth),
    int(1),
    bool(false),
    bool(flags.alignCorners ?? false),
    bool(flags.halfPixelCenters ?? false),
  ], [output]);
  return Array.from(output.data as ArrayLike<number>);
}

/**
 * [0, 8] widened to 4, worked by hand. Legacy: positions o * 2/4 = 0, 0.5, 1, 1.5 (the last
 * clamped to pixel 1). align_corners: o * (2-1)/(4-1), so 0, 1/3, 2/3, 1 (in float32: 8/3 is
 * 8 * fround(1/3)). half_pixel_centers: (o + 0.5) * 0.5 - 0.5 = -0.25, 0.25, 0.75, 1.25, the
 * outer two reading their edge pixel only.
 */
const THIRD = Math.fround(1 / 3);
const ROW = {
  legacy: [0, 4, 8, 8],
  alignCorners: [0, Math.fround(8 * THIRD), Math.fround(8 * Math.fround(2 * THIRD)), 8],
  halfPixelCenters: [0, 2, 6, 8],
};

Deno.test("resizeBilinear.execute() maps coordinates as align_corners and half_pixel_centers say", () => {
  const input = Float32Array.of(0, 8);
  deepStrictEqual(resizeRow("TENSOR_FLOAT32", input, 4, {}), ROW.legacy);
  deepStrictEqual(resizeRow("TENSOR_FLOAT32", input, 4, { alignCorners: true }), ROW.alignCorners);
  deepStrictEqual(
    resizeRow("TENSOR_FLOAT32", input, 4, { halfPixelCenters: true }),
    ROW.halfPixelCenters,
  );
  // float16 computes in float32 and rounds once into float16.
  deepStrictEqual(
    resizeRow("TENSOR_FLOAT16", Float16Array.of(0, 8), 4, { alignCorners: true }),
    [...Float16Array.from(ROW.alignCorners)],
  );
});

Deno.test("resizeBilinear.execute() truncates quant8 results, signed ones after the shift", () => {
  // 2.67 and 5.33 truncate to 2 and 5.
  deepStrictEqual(
    resizeRow("TENSOR_QUANT8_ASYMM", Uint8Array.of(0, 8), 4, { alignCorners: true }),
    [0, 2, 5, 8],
  );
  deepStrictEqual(
    resizeRow("TENSOR_QUANT8_ASYMM", Uint8Array.of(0, 8), 4, { halfPixelCenters: true }),
    [0, 2, 6, 8],
  );
  // int8 q is uint8 q + 128 with zero point + 128: the same row, 128 lower.
  deepStrictEqual(
    resizeRow("TENSOR_QUANT8_ASYMM_SIGNED", Int8Array.of(-128, -120), 4, { alignCorners: true }),
    [-128, -126, -123, -120],
  );
});

Deno.test("resizeBilinear.execute() rejects both flags true when they arrive at execution", () => {
  throws(
    () =>
      resizeRow("TENSOR_FLOAT32", Float32Array.of(0, 8), 4, {
        alignCorners: true,
        halfPixelCenters: true,
      }),
    /are both true/,
  );
});
