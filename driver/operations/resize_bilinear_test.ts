import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { TensorData } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
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
