import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { floor } from "./floor.ts";
import { logistic } from "./logistic.ts";
import type { DeclaredOperand, OperationDefinition } from "./operation.ts";
import { relu } from "./relu.ts";
import { relu1 } from "./relu1.ts";
import { relu6 } from "./relu6.ts";
import { tanh } from "./tanh.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  scale = 0,
  zeroPoint = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint, lifetime: "MODEL_INPUT" };
}

function unary(definition: OperationDefinition, input: DeclaredOperand, output: DeclaredOperand) {
  return definition.validate({ type: definition.type, inputs: [input], outputs: [output] });
}

Deno.test("tanh() needs V1_2 for quant8 while logistic() and the RELUs need V1_0", () => {
  const input = operand(0, "TENSOR_QUANT8_ASYMM", [1, 4], 0.1, 128);
  strictEqual(unary(tanh, input, operand(1, "TENSOR_QUANT8_ASYMM", [1, 4], 1 / 128, 128)), "V1_2");
  strictEqual(
    unary(logistic, input, operand(1, "TENSOR_QUANT8_ASYMM", [1, 4], 1 / 256, 0)),
    "V1_0",
  );
  strictEqual(unary(relu6, input, operand(1, "TENSOR_QUANT8_ASYMM", [1, 4], 0.1, 128)), "V1_0");
});

Deno.test("logistic() rejects a quant8 output whose scale is not 1/256", () => {
  const input = operand(0, "TENSOR_QUANT8_ASYMM", [4], 0.5, 0);
  throws(
    () => unary(logistic, input, operand(1, "TENSOR_QUANT8_ASYMM", [4], 1 / 128, 0)),
    /scale 1\/256/,
  );
});

Deno.test("relu() rejects a quant8 output quantized differently from its input", () => {
  const input = operand(0, "TENSOR_QUANT8_ASYMM", [4], 0.5, 0);
  throws(() => unary(relu, input, operand(1, "TENSOR_QUANT8_ASYMM", [4], 0.5, 1)), /zero point/);
});

Deno.test("floor() rejects quant8 inputs and ranks above 4", () => {
  throws(() =>
    unary(
      floor,
      operand(0, "TENSOR_QUANT8_ASYMM", [4], 1),
      operand(1, "TENSOR_QUANT8_ASYMM", [4], 1),
    )
  );
  throws(
    () =>
      unary(floor, operand(0, "TENSOR_FLOAT32", [1, 1, 1, 1, 1]), operand(1, "TENSOR_FLOAT32", [])),
    /rank 5/,
  );
});

Deno.test("relu1() clamps quant8 values to the quantized [-1, 1]", () => {
  const t = (data: Uint8Array): Tensor => ({
    type: "TENSOR_QUANT8_ASYMM",
    shape: [4],
    scale: 0.5,
    zeroPoint: 100,
    data,
  });
  const out = t(new Uint8Array(4));
  relu1.execute([t(Uint8Array.of(0, 99, 101, 200))], [out]);
  deepStrictEqual([...out.data as Uint8Array], [98, 99, 101, 102]);
});
