import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { type DeclaredOperand, type PrepareInput } from "./operation.ts";
import { quantized16bitLstm as op } from "./quantized_16bit_lstm.ts";

const Q8: OperandType = "TENSOR_QUANT8_ASYMM";
const TYPES: OperandType[] = [
  ...Array<OperandType>(9).fill(Q8),
  ...Array<OperandType>(4).fill("TENSOR_INT32"),
  "TENSOR_QUANT16_SYMM",
  Q8,
];
/** Batch 2, input size 2, output size 4. */
const SHAPES = [
  [2, 2],
  ...Array.from({ length: 4 }, () => [4, 2]),
  ...Array.from({ length: 4 }, () => [4, 4]),
  ...Array.from({ length: 4 }, () => [4]),
  [2, 4],
  [2, 4],
];
const WEIGHTS_SCALE = 0.004080209881067276;

function quantization(i: number): { scale: number; zeroPoint: number } {
  if (i === 0 || i === 14) return { scale: 1 / 128, zeroPoint: 128 };
  if (i <= 8) return { scale: WEIGHTS_SCALE, zeroPoint: 100 };
  if (i <= 12) return { scale: WEIGHTS_SCALE / 128, zeroPoint: 0 };
  return { scale: 2 ** -11, zeroPoint: 0 };
}

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, ...quantization(index), lifetime: "MODEL_INPUT" };
}

function signature(options: { inputs?: number; inputType?: OperandType; inputRank?: 3 } = {}) {
  const types = [...TYPES];
  types[0] = options.inputType ?? Q8;
  const dims = SHAPES.map((s) => [...s]);
  if (options.inputRank === 3) dims[0] = [2, 2, 1];
  const inputs = types.slice(0, options.inputs ?? 15).map((t, i) => declared(t, dims[i], i));
  return {
    type: "QUANTIZED_16BIT_LSTM" as const,
    inputs,
    outputs: [declared("TENSOR_QUANT16_SYMM", [], 15), declared(Q8, [], 16)],
  };
}

function prepareInputs(shapes: number[][]): PrepareInput[] {
  return shapes.map((shape, i) => ({
    type: TYPES[i],
    shape,
    ...quantization(i),
    value: undefined,
  }));
}

Deno.test("quantized16bitLstm.validate() accepts the HAL 1.2 signature", () => {
  strictEqual(op.validate(signature()), "V1_2");
});

Deno.test("quantized16bitLstm.validate() names a wrong input count", () => {
  throws(() => op.validate(signature({ inputs: 14 })), /expected 15 inputs, got 14/);
});

Deno.test("quantized16bitLstm.validate() names a wrong type", () => {
  throws(
    () => op.validate(signature({ inputType: "TENSOR_FLOAT32" })),
    /input 0 .* type TENSOR_FLOAT32, expected TENSOR_QUANT8_ASYMM/,
  );
});

Deno.test("quantized16bitLstm.validate() names a wrong input rank", () => {
  throws(() => op.validate(signature({ inputRank: 3 })), /input \(input 0\).* rank 3, expected 2/);
});

Deno.test("quantized16bitLstm.prepare() gives the state shapes to both outputs", () => {
  deepStrictEqual(op.prepare(prepareInputs(SHAPES), []), [[2, 4], [2, 4]]);
});

Deno.test("quantized16bitLstm.prepare() rejects a cell state scale other than 2^-11", () => {
  const inputs = prepareInputs(SHAPES);
  inputs[13] = { ...inputs[13], scale: 2 ** -10 };
  throws(() => op.prepare(inputs, []), /prev_cell_state \(input 13\) has scale/);
});

Deno.test("quantized16bitLstm.prepare() rejects weights of another zero point", () => {
  const inputs = prepareInputs(SHAPES);
  inputs[6] = { ...inputs[6], zeroPoint: 99 };
  throws(() => op.prepare(inputs, []), /recurrent_to_forget_weights \(input 6\)/);
});
