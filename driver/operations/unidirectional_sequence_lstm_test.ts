import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../../nnapi/types.ts";
import { type DeclaredOperand, type PrepareInput } from "./operation.ts";
import { unidirectionalSequenceLstm as op } from "./unidirectional_sequence_lstm.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

/** A CIFG cell with peephole and projection: input [maxTime 3, batch 2, 5], 4 cells, 3 outputs. */
const SHAPES: number[][] = [
  [3, 2, 5],
  [],
  [4, 5],
  [4, 5],
  [4, 5],
  [],
  [4, 3],
  [4, 3],
  [4, 3],
  [],
  [4],
  [4],
  [],
  [4],
  [4],
  [4],
  [3, 4],
  [],
  [2, 3],
  [2, 4],
  [],
  [],
  [],
  [],
  [],
  [],
  [],
  [],
];

function signature(
  options: { type?: OperandType; inputs?: number; inputRank?: number; timeMajor?: OperandType } =
    {},
) {
  const t = options.type ?? "TENSOR_FLOAT32";
  const scalar: OperandType = t === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  const types: OperandType[] = [
    ...Array<OperandType>(20).fill(t),
    "INT32",
    scalar,
    scalar,
    options.timeMajor ?? "BOOL",
    ...Array<OperandType>(4).fill(t),
  ];
  const dims = SHAPES.map((s) => [...s]);
  dims[0] = dims[0].slice(0, options.inputRank ?? 3);
  const inputs = types.slice(0, options.inputs ?? 28).map((type, i) => declared(type, dims[i], i));
  return { type: "UNIDIRECTIONAL_SEQUENCE_LSTM" as const, inputs, outputs: [declared(t, [], 28)] };
}

function prepareInputs(shapes: number[][], timeMajor = 1): PrepareInput[] {
  const scalars = [4, 0, 0, timeMajor];
  return shapes.map((shape, i) => ({
    type: i >= 20 && i <= 23 ? "INT32" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: i >= 20 && i <= 23
      ? new Float32Array([scalars[i - 20]])
      : shape.length === 0
      ? null
      : new Float32Array(shape.reduce((n, d) => n * d, 1)),
  }));
}

Deno.test("unidirectionalSequenceLstm.validate() accepts float32 and float16 as V1_2", () => {
  strictEqual(op.validate(signature()), "V1_2");
  strictEqual(op.validate(signature({ type: "TENSOR_FLOAT16" })), "V1_2");
});

Deno.test("unidirectionalSequenceLstm.validate() names a wrong input count", () => {
  throws(() => op.validate(signature({ inputs: 27 })), /expected 28 inputs, got 27/);
});

Deno.test("unidirectionalSequenceLstm.validate() names a wrong type", () => {
  throws(() => op.validate(signature({ type: "TENSOR_QUANT8_ASYMM" })), /unsupported type/);
  throws(() => op.validate(signature({ timeMajor: "INT32" })), /input 23 .* type INT32/);
});

Deno.test("unidirectionalSequenceLstm.validate() names a wrong input rank", () => {
  throws(() => op.validate(signature({ inputRank: 2 })), /input \(input 0\).* rank 2, expected 3/);
});

Deno.test("unidirectionalSequenceLstm.prepare() infers the output in the input's layout", () => {
  deepStrictEqual(op.prepare(prepareInputs(SHAPES), []), [[3, 2, 3]]);
  const batchMajor = SHAPES.map((s) => [...s]);
  batchMajor[0] = [2, 3, 5];
  deepStrictEqual(op.prepare(prepareInputs(batchMajor, 0), []), [[2, 3, 3]]);
});

Deno.test("unidirectionalSequenceLstm.prepare() rejects an input gate bias under CIFG", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[12] = [4];
  throws(() => op.prepare(prepareInputs(shapes), []), /input_gate_bias \(input 12\)/);
});

Deno.test("unidirectionalSequenceLstm.prepare() rejects a partial layer normalization", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[25] = [4];
  throws(() => op.prepare(prepareInputs(shapes), []), /layer normalization/);
});
