import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { fromNumbers } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { averagePool2d } from "./average_pool_2d.ts";
import { l2Pool2d } from "./l2_pool_2d.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  scale = 0,
  zeroPoint = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint, lifetime: "CONSTANT_COPY" };
}

function implicitSignature(type: OperandType, outScale: number, nchw = false) {
  const scalars: OperandType[] = ["INT32", "INT32", "INT32", "INT32", "INT32", "INT32"];
  if (nchw) scalars.push("BOOL");
  return {
    type: "AVERAGE_POOL_2D" as const,
    inputs: [
      operand(0, type, [1, 4, 4, 1], 0.5, 3),
      ...scalars.map((t, i) => operand(1 + i, t, [])),
    ],
    outputs: [operand(9, type, [1, 2, 2, 1], outScale, 3)],
  };
}

Deno.test("averagePool2d.validate() needs HAL 1.2 only for the layout flag", () => {
  strictEqual(averagePool2d.validate(implicitSignature("TENSOR_QUANT8_ASYMM", 0.5)), "V1_0");
  strictEqual(averagePool2d.validate(implicitSignature("TENSOR_QUANT8_ASYMM", 0.5, true)), "V1_2");
});

Deno.test("averagePool2d.validate() rejects a quantized output with other quantization", () => {
  throws(
    () => averagePool2d.validate(implicitSignature("TENSOR_QUANT8_ASYMM", 0.25)),
    /expected the input's 0.5 and 3/,
  );
});

Deno.test("l2Pool2d.validate() rejects quantized inputs", () => {
  throws(() => l2Pool2d.validate(implicitSignature("TENSOR_QUANT8_ASYMM", 0.5)), /unsupported/);
});

Deno.test("averagePool2d.prepare() infers explicit-padding output shapes", () => {
  const input: PrepareInput = {
    type: "TENSOR_FLOAT32",
    shape: [1, 5, 4, 2],
    scale: 0,
    zeroPoint: 0,
    value: undefined,
  };
  // padding l/r/t/b 1,1,0,0; strides 2,1; filter 2x3; no activation.
  const scalars = [1, 1, 0, 0, 2, 1, 2, 3, 0].map((v): PrepareInput => ({
    type: "INT32",
    shape: [],
    scale: 0,
    zeroPoint: 0,
    value: fromNumbers("INT32", [v]),
  }));
  const out = [{ type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 }];
  deepStrictEqual(averagePool2d.prepare([input, ...scalars], out), [[1, 3, 3, 2]]);
});
