import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { svdf } from "./svdf.ts";
import {
  type DeclaredOperand,
  OperationError,
  type PrepareInput,
  ValueNotYetKnown,
} from "./operation.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType) {
  const inputs = Array.from({ length: 7 }, (_, i) => declared(i >= 5 ? "INT32" : type, [], i));
  return { type: "SVDF" as const, inputs, outputs: [declared(type, [], 7), declared(type, [], 8)] };
}

/** batch 2, input 3, 4 filters of memory 10, the given rank; bias omitted unless given. */
function prepareInputs(
  rank: number,
  bias: Float32Array | null | "unknown" = null,
): PrepareInput[] {
  const shapes = [[2, 3], [4, 3], [4, 10], [4 / rank], [2, 40], [], []];
  const values = [
    undefined,
    undefined,
    undefined,
    bias === "unknown" ? undefined : bias,
    undefined,
    [rank],
    [0],
  ];
  return shapes.map((shape, i) => ({
    type: i >= 5 ? "INT32" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: Array.isArray(values[i]) ? new Int32Array(values[i] as number[]) : values[i] as
      | Float32Array
      | null
      | undefined,
  }));
}

Deno.test("svdf.validate() accepts float32 as V1_0 and float16 as V1_2", () => {
  strictEqual(svdf.validate(signature("TENSOR_FLOAT32")), "V1_0");
  strictEqual(svdf.validate(signature("TENSOR_FLOAT16")), "V1_2");
  throws(() => svdf.validate(signature("TENSOR_QUANT8_ASYMM")), OperationError);
});

Deno.test("svdf.prepare() infers the state and [batch, filters / rank] output shapes", () => {
  deepStrictEqual(svdf.prepare(prepareInputs(1), []), [[2, 40], [2, 4]]);
  deepStrictEqual(svdf.prepare(prepareInputs(2), []), [[2, 40], [2, 2]]);
});

Deno.test("svdf.prepare() checks a present bias against the number of units", () => {
  deepStrictEqual(svdf.prepare(prepareInputs(2, new Float32Array(2)), [])[1], [2, 2]);
  const wrong = prepareInputs(2, new Float32Array(4));
  wrong[3] = { ...wrong[3], shape: [4] };
  throws(() => svdf.prepare(wrong, []), /bias/);
});

Deno.test("svdf.prepare() waits for execution while the optional bias is unknown", () => {
  throws(() => svdf.prepare(prepareInputs(1, "unknown"), []), ValueNotYetKnown);
});

Deno.test("svdf.prepare() rejects a filter count that is not a multiple of the rank", () => {
  throws(() => svdf.prepare(prepareInputs(3), []), /multiple of rank/);
});
