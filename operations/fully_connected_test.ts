import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { fromNumbers, type Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { fullyConnected } from "./fully_connected.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[], scale = 0) {
  const o: DeclaredOperand = {
    index,
    type,
    dimensions,
    scale,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY",
  };
  return o;
}

function prepareInput(type: OperandType, shape: number[], values?: number[]): PrepareInput {
  const value = values ? fromNumbers(type, values) : undefined;
  return { type, shape, scale: 0, zeroPoint: 0, value };
}

const OUT = [{ type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 }];

Deno.test("fullyConnected.prepare() flattens the input to [batches, weights dims[1]]", () => {
  const shapes = fullyConnected.prepare([
    prepareInput("TENSOR_FLOAT32", [2, 3, 1, 4]),
    prepareInput("TENSOR_FLOAT32", [5, 6]),
    prepareInput("TENSOR_FLOAT32", [5]),
    prepareInput("INT32", [], [0]),
  ], OUT);
  deepStrictEqual(shapes, [[4, 5]]);
});

Deno.test("fullyConnected.prepare() rejects an input size that does not divide the input", () => {
  throws(
    () =>
      fullyConnected.prepare([
        prepareInput("TENSOR_FLOAT32", [2, 5]),
        prepareInput("TENSOR_FLOAT32", [3, 4]),
        prepareInput("TENSOR_FLOAT32", [3]),
        prepareInput("INT32", [], [0]),
      ], OUT),
    /not a multiple of the weights' input size 4/,
  );
});

Deno.test("fullyConnected.validate() needs HAL 1.2 when outputScale <= inputScale x weightsScale", () => {
  const inputs = [
    operand(0, "TENSOR_QUANT8_ASYMM", [1, 2], 1),
    operand(1, "TENSOR_QUANT8_ASYMM", [1, 2], 1),
    operand(2, "TENSOR_INT32", [1], 1),
    operand(3, "INT32", []),
  ];
  const version = (outScale: number) =>
    fullyConnected.validate({
      type: "FULLY_CONNECTED",
      inputs,
      outputs: [operand(4, "TENSOR_QUANT8_ASYMM", [1, 1], outScale)],
    });
  strictEqual(version(2), "V1_0");
  strictEqual(version(1), "V1_2");
});

Deno.test("fullyConnected.execute() reads weights given as model inputs", () => {
  const t = (type: OperandType, shape: number[], values: number[]): Tensor => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    data: fromNumbers(type, values),
  });
  const output = t("TENSOR_FLOAT32", [1, 2], [0, 0]);
  fullyConnected.execute([
    t("TENSOR_FLOAT32", [1, 3], [1, 2, 3]),
    t("TENSOR_FLOAT32", [2, 3], [1, 1, 1, 0, 0, 2]),
    t("TENSOR_FLOAT32", [2], [0, 1]),
    t("INT32", [], [1]),
  ], [output]);
  deepStrictEqual(Array.from(output.data!), [6, 7]);
});
