import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { l2Normalization } from "./l2_normalization.ts";
import { localResponseNormalization } from "./local_response_normalization.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";
import { softmax } from "./softmax.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  extra: Partial<DeclaredOperand> = {},
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", ...extra };
}

const constant = (index: number, type: OperandType, value: Int32Array | Float32Array) =>
  operand(index, type, [], { lifetime: "CONSTANT_COPY", value });

Deno.test("softmax() needs V1_2 for rank 3 or an axis input, V1_0 for ranks 2 and 4", () => {
  const signature = (dims: number[], withAxis: boolean) => ({
    type: "SOFTMAX" as const,
    inputs: [
      operand(0, "TENSOR_FLOAT32", dims),
      constant(1, "FLOAT32", Float32Array.of(1)),
      ...(withAxis ? [constant(2, "INT32", Int32Array.of(0))] : []),
    ],
    outputs: [operand(3, "TENSOR_FLOAT32", dims)],
  });
  strictEqual(softmax.validate(signature([2, 5], false)), "V1_0");
  strictEqual(softmax.validate(signature([1, 2, 2, 5], false)), "V1_0");
  strictEqual(softmax.validate(signature([2, 2, 5], false)), "V1_2");
  strictEqual(softmax.validate(signature([2, 5], true)), "V1_2");
});

Deno.test("softmax() rejects a non-positive constant beta and a quant8 output not at 1/256", () => {
  throws(
    () =>
      softmax.validate({
        type: "SOFTMAX",
        inputs: [operand(0, "TENSOR_FLOAT32", [2, 5]), constant(1, "FLOAT32", Float32Array.of(0))],
        outputs: [operand(2, "TENSOR_FLOAT32", [2, 5])],
      }),
    /beta 0/,
  );
  throws(
    () =>
      softmax.validate({
        type: "SOFTMAX",
        inputs: [
          operand(0, "TENSOR_QUANT8_ASYMM", [2, 5], { scale: 0.5 }),
          constant(1, "FLOAT32", Float32Array.of(1)),
        ],
        outputs: [operand(2, "TENSOR_QUANT8_ASYMM", [2, 5], { scale: 1 / 128 })],
      }),
    /scale 1\/256/,
  );
});

Deno.test("softmax() rejects an axis outside the input rank", () => {
  const input: PrepareInput = {
    type: "TENSOR_FLOAT32",
    shape: [2, 3],
    scale: 0,
    zeroPoint: 0,
    value: undefined,
  };
  const scalar = (value: Int32Array | Float32Array): PrepareInput => ({
    ...input,
    shape: [],
    value,
  });
  deepStrictEqual(
    softmax.prepare([input, scalar(Float32Array.of(1)), scalar(Int32Array.of(-2))], []),
    [[2, 3]],
  );
  throws(
    () => softmax.prepare([input, scalar(Float32Array.of(1)), scalar(Int32Array.of(2))], []),
    /axis 2/,
  );
});

Deno.test("l2Normalization() and localResponseNormalization() need V1_2 unless rank 4", () => {
  strictEqual(
    l2Normalization.validate({
      type: "L2_NORMALIZATION",
      inputs: [operand(0, "TENSOR_FLOAT32", [1, 1, 1, 3])],
      outputs: [operand(1, "TENSOR_FLOAT32", [1, 1, 1, 3])],
    }),
    "V1_0",
  );
  strictEqual(
    l2Normalization.validate({
      type: "L2_NORMALIZATION",
      inputs: [operand(0, "TENSOR_FLOAT32", [3])],
      outputs: [operand(1, "TENSOR_FLOAT32", [3])],
    }),
    "V1_2",
  );
  const lrn = (dims: number[]) => ({
    type: "LOCAL_RESPONSE_NORMALIZATION" as const,
    inputs: [
      operand(0, "TENSOR_FLOAT32", dims),
      constant(1, "INT32", Int32Array.of(2)),
      constant(2, "FLOAT32", Float32Array.of(1)),
      constant(3, "FLOAT32", Float32Array.of(1)),
      constant(4, "FLOAT32", Float32Array.of(0.5)),
    ],
    outputs: [operand(5, "TENSOR_FLOAT32", dims)],
  });
  strictEqual(localResponseNormalization.validate(lrn([1, 1, 1, 6])), "V1_0");
  strictEqual(localResponseNormalization.validate(lrn([2, 6])), "V1_2");
});

Deno.test("l2Normalization() rejects a quant8 output not at scale 1/128, zero point 128", () => {
  throws(
    () =>
      l2Normalization.validate({
        type: "L2_NORMALIZATION",
        inputs: [operand(0, "TENSOR_QUANT8_ASYMM", [1, 3], { scale: 0.1, zeroPoint: 32 })],
        outputs: [operand(1, "TENSOR_QUANT8_ASYMM", [1, 3], { scale: 1 / 128, zeroPoint: 0 })],
      }),
    /zero point 128/,
  );
});
