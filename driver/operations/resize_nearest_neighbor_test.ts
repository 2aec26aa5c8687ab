import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { TensorData } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
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
    /expected 3 or 4 inputs, got 2/,
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
