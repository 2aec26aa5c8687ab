import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";
import { reduceAll } from "./reduce_all.ts";
import { reduceMax } from "./reduce_max.ts";
import { reduceSum } from "./reduce_sum.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  extra: Partial<DeclaredOperand> = {},
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", ...extra };
}

function inputs(type: OperandType, dims: number[], keepDimsType: OperandType = "BOOL") {
  return [
    operand(0, type, dims),
    operand(1, "TENSOR_INT32", [1], { lifetime: "CONSTANT_COPY", value: Int32Array.of(0) }),
    operand(2, keepDimsType, [], { lifetime: "CONSTANT_COPY", value: Uint8Array.of(1) }),
  ];
}

Deno.test("reduce ops need V1_2 and accept only their types", () => {
  const sum = (type: OperandType, keepDims: OperandType = "BOOL") => ({
    type: "REDUCE_SUM" as const,
    inputs: inputs(type, [2, 3], keepDims),
    outputs: [operand(3, type, [1, 3])],
  });
  strictEqual(reduceSum.validate(sum("TENSOR_FLOAT32")), "V1_2");
  strictEqual(reduceSum.validate(sum("TENSOR_FLOAT16")), "V1_2");
  throws(() => reduceSum.validate(sum("TENSOR_QUANT8_ASYMM")), /unsupported type/);
  throws(() => reduceSum.validate(sum("TENSOR_FLOAT32", "INT32")), /input 2 .* expected BOOL/);
  strictEqual(
    reduceMax.validate({
      type: "REDUCE_MAX",
      inputs: inputs("TENSOR_QUANT8_ASYMM", [2, 3]),
      outputs: [operand(3, "TENSOR_QUANT8_ASYMM", [1, 3])],
    }),
    "V1_2",
  );
  throws(
    () =>
      reduceAll.validate({
        type: "REDUCE_ALL",
        inputs: inputs("TENSOR_FLOAT32", [2, 3]),
        outputs: [operand(3, "TENSOR_FLOAT32", [1, 3])],
      }),
    /unsupported type TENSOR_FLOAT32/,
  );
});

Deno.test("reduce ops reject a wrong input count and rank", () => {
  throws(
    () =>
      reduceSum.validate({
        type: "REDUCE_SUM",
        inputs: inputs("TENSOR_FLOAT32", [2, 3]).slice(0, 2),
        outputs: [operand(3, "TENSOR_FLOAT32", [1, 3])],
      }),
    /expected 3 inputs, got 2/,
  );
  throws(
    () =>
      reduceSum.validate({
        type: "REDUCE_SUM",
        inputs: inputs("TENSOR_FLOAT32", [1, 1, 1, 1, 3]),
        outputs: [operand(3, "TENSOR_FLOAT32", [1, 1, 1, 1, 3])],
      }),
    /rank 5, expected at most 4/,
  );
});

Deno.test("reduce ops give [1] when every axis is reduced without keep-dims", () => {
  const info = { scale: 0, zeroPoint: 0 };
  const prepareInputs: PrepareInput[] = [
    { ...info, type: "TENSOR_BOOL8", shape: [2, 3], value: undefined },
    { ...info, type: "TENSOR_INT32", shape: [3], value: Int32Array.of(0, 1, -1) },
    { ...info, type: "BOOL", shape: [], value: Uint8Array.of(0) },
  ];
  deepStrictEqual(reduceAll.prepare(prepareInputs, []), [[1]]);
  const out = new Uint8Array(1);
  reduceAll.execute([
    { ...info, type: "TENSOR_BOOL8", shape: [2, 3], data: Uint8Array.of(1, 1, 1, 1, 0, 1) },
    { ...info, type: "TENSOR_INT32", shape: [2], data: Int32Array.of(0, 1) },
    { ...info, type: "BOOL", shape: [], data: Uint8Array.of(0) },
  ], [{ ...info, type: "TENSOR_BOOL8", shape: [1], data: out }]);
  deepStrictEqual([...out], [0]);
});
