import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";
import { resizeNearestNeighbor } from "./resize_nearest_neighbor.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(
  type: OperandType,
  scalarType: OperandType,
  options: { layout?: boolean; inputDims?: number[] } = {},
) {
  return {
    type: "RESIZE_NEAREST_NEIGHBOR" as const,
    inputs: [
      declared(type, options.inputDims ?? [1, 2, 2, 1], 0),
      declared(scalarType, [], 1),
      declared(scalarType, [], 2),
      ...(options.layout ? [declared("BOOL", [], 3)] : []),
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

function rejects(fn: () => unknown, pattern: RegExp) {
  throws(fn, (e) => e instanceof OperationError && pattern.test(e.message));
}

Deno.test("resizeNearestNeighbor.validate() is V1_2 in every form", () => {
  strictEqual(resizeNearestNeighbor.validate(signature("TENSOR_FLOAT32", "INT32")), "V1_2");
  strictEqual(
    resizeNearestNeighbor.validate(signature("TENSOR_FLOAT32", "FLOAT32", { layout: true })),
    "V1_2",
  );
  strictEqual(resizeNearestNeighbor.validate(signature("TENSOR_QUANT8_ASYMM", "FLOAT32")), "V1_2");
  strictEqual(resizeNearestNeighbor.validate(signature("TENSOR_FLOAT16", "FLOAT16")), "V1_2");
});

Deno.test("resizeNearestNeighbor.validate() names the faulty input count, type and rank", () => {
  const sig = signature("TENSOR_FLOAT32", "INT32");
  rejects(
    () => resizeNearestNeighbor.validate({ ...sig, inputs: sig.inputs.slice(0, 2) }),
    /expected 3 or 4 or 5 or 6 inputs, got 2/,
  );
  rejects(
    () => resizeNearestNeighbor.validate(signature("TENSOR_INT32", "INT32")),
    /input 0 .*unsupported type TENSOR_INT32/,
  );
  rejects(
    () => resizeNearestNeighbor.validate(signature("TENSOR_FLOAT16", "FLOAT32")),
    /input 2 .*FLOAT32, expected INT32 or FLOAT16/,
  );
  rejects(
    () =>
      resizeNearestNeighbor.validate(
        signature("TENSOR_FLOAT32", "INT32", { inputDims: [2, 2, 1] }),
      ),
    /input 0 .*rank 3, expected 4/,
  );
});

Deno.test("resizeNearestNeighbor.prepare() reads sizes or scales, in either layout", () => {
  deepStrictEqual(
    resizeNearestNeighbor.prepare(inputs([1, 2, 2, 3], scalar("INT32", 5), scalar("INT32", 4)), []),
    [[1, 4, 5, 3]],
  );
  deepStrictEqual(
    resizeNearestNeighbor.prepare(
      inputs([1, 3, 2, 2], scalar("FLOAT32", 1.8), scalar("FLOAT32", 1.5), true),
      [],
    ),
    [[1, 3, 3, 3]],
  );
  rejects(
    () =>
      resizeNearestNeighbor.prepare(
        inputs([1, 2, 2, 1], scalar("INT32", 0), scalar("INT32", 3)),
        [],
      ),
    /must be positive/,
  );
});

/** A constant BOOL scalar. */
function flag(value: boolean, index: number): DeclaredOperand {
  return {
    ...declared("BOOL", [], index),
    lifetime: "CONSTANT_COPY",
    value: Uint8Array.of(+value),
  };
}

Deno.test("resizeNearestNeighbor.validate() is V1_3 with the coordinate flags, else unchanged", () => {
  const base = signature("TENSOR_FLOAT32", "INT32", { layout: true });
  const withFlags = (...flags: boolean[]) => ({
    ...base,
    inputs: [...base.inputs, ...flags.map((f, k) => flag(f, 4 + k))],
  });
  strictEqual(resizeNearestNeighbor.validate(base), "V1_2");
  strictEqual(resizeNearestNeighbor.validate(withFlags(true)), "V1_3");
  strictEqual(resizeNearestNeighbor.validate(withFlags(false, true)), "V1_3");
  rejects(
    () => resizeNearestNeighbor.validate(withFlags(true, true)),
    /align_corners \(input 4, operand 4\) and half_pixel_centers \(input 5, operand 5\) are both true/,
  );
  const flagAsFloat = withFlags(false);
  flagAsFloat.inputs[4] = declared("FLOAT32", [], 4);
  rejects(
    () => resizeNearestNeighbor.validate(flagAsFloat),
    /input 4 \(operand 4\) has type FLOAT32, expected BOOL/,
  );
});

/** Runs RESIZE_NEAREST_NEIGHBOR on a 1x1xWx1 row in NCHW layout with the given flags. */
function resizeRow(
  type: OperandType,
  values: TensorData,
  outWidth: number,
  flags: boolean[],
): number[] {
  const tensor = (t: OperandType, shape: number[], data: TensorData): Tensor => ({
    type: t,
    shape,
    scale: t.startsWith("TENSOR_QUANT8") ? 0.5 : 0,
    zeroPoint: 0,
    data,
  });
  const Out = values.constructor as new (n: number) => TensorData;
  const output = tensor(type, [1, 1, 1, outWidth], new Out(outWidth));
  resizeNearestNeighbor.execute([
    tensor(type, [1, 1, 1, values.length], values),
    tensor("INT32", [], Int32Array.of(outWidth)),
    tensor("INT32", [], Int32Array.of(1)),
    tensor("BOOL", [], Uint8Array.of(1)),
    ...flags.map((f) => tensor("BOOL", [], Uint8Array.of(+f))),
  ], [output]);
  return Array.from(output.data as ArrayLike<number>);
}

Deno.test("resizeNearestNeighbor.execute() picks pixels as align_corners and half_pixel_centers say", () => {
  // 3 -> 5, by hand. Legacy: floor(o * 0.6) = 0, 0, 1, 1, 2. align_corners: round(o * 0.5)
  // (half away from zero) = 0, 1, 1, 2, 2. half_pixel_centers: floor((o + 0.5) * 0.6) =
  // floor(0.3, 0.9, 1.5, 2.1, 2.7) = 0, 0, 1, 2, 2.
  const row = Float32Array.of(10, 20, 30);
  deepStrictEqual(resizeRow("TENSOR_FLOAT32", row, 5, []), [10, 10, 20, 20, 30]);
  deepStrictEqual(resizeRow("TENSOR_FLOAT32", row, 5, [true]), [10, 20, 20, 30, 30]);
  deepStrictEqual(resizeRow("TENSOR_FLOAT32", row, 5, [false, true]), [10, 10, 20, 30, 30]);
  // 4 -> 2 with half-pixel centers: floor(0.5 * 2) = 1 and floor(1.5 * 2) = 3.
  deepStrictEqual(
    resizeRow("TENSOR_FLOAT32", Float32Array.of(1, 2, 3, 4), 2, [false, true]),
    [2, 4],
  );
  // Elements are copied whatever their type.
  deepStrictEqual(resizeRow("TENSOR_FLOAT16", Float16Array.of(0.1, -2, 3), 5, [true]), [
    ...Float16Array.of(0.1, -2, -2, 3, 3),
  ]);
  deepStrictEqual(resizeRow("TENSOR_QUANT8_ASYMM", Uint8Array.of(1, 2, 3), 5, [true, false]), [
    1,
    2,
    2,
    3,
    3,
  ]);
  deepStrictEqual(
    resizeRow("TENSOR_QUANT8_ASYMM_SIGNED", Int8Array.of(-128, 0, 127), 5, [false, true]),
    [-128, -128, 0, 127, 127],
  );
});
