import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { depthToSpace } from "./depth_to_space.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";
import { spaceToDepth } from "./space_to_depth.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, layout: boolean, rank = 4) {
  const dims = new Array<number>(rank).fill(1);
  return {
    type: "DEPTH_TO_SPACE" as const,
    inputs: [
      declared(type, dims, 0),
      declared("INT32", [], 1),
      ...(layout ? [declared("BOOL", [], 2)] : []),
    ],
    outputs: [declared(type, dims, 3)],
  };
}

function inputs(shape: number[], blockSize: number, nchw?: boolean): PrepareInput[] {
  const scalar = (type: OperandType, v: number) => ({
    type,
    shape: [],
    scale: 0,
    zeroPoint: 0,
    value: type === "BOOL" ? new Uint8Array([v]) : new Int32Array([v]),
  });
  return [
    { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, value: undefined },
    scalar("INT32", blockSize),
    ...(nchw === undefined ? [] : [scalar("BOOL", nchw ? 1 : 0)]),
  ];
}

Deno.test("depthToSpace.validate() needs HAL 1.2 for the layout flag or float16", () => {
  strictEqual(depthToSpace.validate(signature("TENSOR_FLOAT32", false)), "V1_0");
  strictEqual(depthToSpace.validate(signature("TENSOR_QUANT8_ASYMM", false)), "V1_0");
  strictEqual(depthToSpace.validate(signature("TENSOR_FLOAT32", true)), "V1_2");
  strictEqual(spaceToDepth.validate(signature("TENSOR_FLOAT16", false)), "V1_2");
  throws(() => depthToSpace.validate(signature("TENSOR_INT32", false)), OperationError);
  throws(() => spaceToDepth.validate(signature("TENSOR_FLOAT32", false, 3)), OperationError);
});

Deno.test("depthToSpace.prepare() multiplies height and width by the block size", () => {
  deepStrictEqual(depthToSpace.prepare(inputs([1, 2, 2, 8], 2), []), [[1, 4, 4, 2]]);
  deepStrictEqual(depthToSpace.prepare(inputs([1, 8, 2, 2], 2, true), []), [[1, 2, 4, 4]]);
  deepStrictEqual(depthToSpace.prepare(inputs([2, 1, 1, 9], 3, false), []), [[2, 3, 3, 1]]);
});

Deno.test("depthToSpace.prepare() rejects a depth not divisible by the squared block size", () => {
  throws(() => depthToSpace.prepare(inputs([1, 2, 2, 6], 2), []), OperationError);
  throws(() => depthToSpace.prepare(inputs([1, 2, 2, 8], 0), []), OperationError);
});

Deno.test("spaceToDepth.prepare() divides height and width by the block size", () => {
  deepStrictEqual(spaceToDepth.prepare(inputs([1, 4, 4, 2], 2), []), [[1, 2, 2, 8]]);
  deepStrictEqual(spaceToDepth.prepare(inputs([1, 2, 4, 4], 2, true), []), [[1, 8, 2, 2]]);
  throws(() => spaceToDepth.prepare(inputs([1, 4, 3, 2], 2), []), OperationError);
});
