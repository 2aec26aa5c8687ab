import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { fromNumbers } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { depthwiseConv2d } from "./depthwise_conv_2d.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "CONSTANT_COPY" };
}

function prepareInput(type: OperandType, shape: number[], values?: number[]): PrepareInput {
  const value = values ? fromNumbers(type, values) : undefined;
  return { type, shape, scale: 0, zeroPoint: 0, value };
}

const OUT = [{ type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 }];

function implicitInputs(filterShape: number[], multiplier: number): PrepareInput[] {
  return [
    prepareInput("TENSOR_FLOAT32", [1, 4, 4, 2]),
    prepareInput("TENSOR_FLOAT32", filterShape),
    prepareInput("TENSOR_FLOAT32", [filterShape[3]]),
    ...[1, 2, 2, multiplier, 0].map((v) => prepareInput("INT32", [], [v])),
  ];
}

Deno.test("depthwiseConv2d.validate() tells the 11-input explicit form from the dilated one", () => {
  const head = [
    operand(0, "TENSOR_FLOAT32", [1, 4, 4, 2]),
    operand(1, "TENSOR_FLOAT32", [1, 2, 2, 2]),
    operand(2, "TENSOR_FLOAT32", [2]),
  ];
  const out = operand(20, "TENSOR_FLOAT32", [0, 0, 0, 0]);
  const explicit = Array<OperandType>(8).fill("INT32");
  const dilated: OperandType[] = [
    "INT32",
    "INT32",
    "INT32",
    "INT32",
    "INT32",
    "BOOL",
    "INT32",
    "INT32",
  ];
  const version = (types: OperandType[]) =>
    depthwiseConv2d.validate({
      type: "DEPTHWISE_CONV_2D",
      inputs: [...head, ...types.map((t, i) => operand(3 + i, t, []))],
      outputs: [out],
    });
  strictEqual(version(explicit), "V1_0");
  strictEqual(version(dilated), "V1_2");
});

Deno.test("depthwiseConv2d.prepare() multiplies the input depth by the depth multiplier", () => {
  deepStrictEqual(depthwiseConv2d.prepare(implicitInputs([1, 3, 3, 4], 2), OUT), [[1, 2, 2, 4]]);
});

Deno.test("depthwiseConv2d.prepare() rejects a filter depth that is not depth x multiplier", () => {
  throws(
    () => depthwiseConv2d.prepare(implicitInputs([1, 3, 3, 4], 1), OUT),
    /expected 2 input channels x depth multiplier 1/,
  );
});
