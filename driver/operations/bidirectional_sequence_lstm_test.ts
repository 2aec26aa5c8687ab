import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../../nnapi/types.ts";
import { bidirectionalSequenceLstm as op } from "./bidirectional_sequence_lstm.ts";
import { type DeclaredOperand, type PrepareInput } from "./operation.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

/** A full cell without peephole or projection: input size 2, 4 cells and outputs. */
const CELL: number[][] = [
  [4, 2],
  [4, 2],
  [4, 2],
  [4, 2],
  [4, 4],
  [4, 4],
  [4, 4],
  [4, 4],
  [],
  [],
  [],
  [4],
  [4],
  [4],
  [4],
  [],
  [],
];
/** Time-major input [maxTime 3, batch 1, 2]. */
const SHAPES: number[][] = [
  [3, 1, 2],
  ...CELL,
  ...CELL,
  [1, 4],
  [1, 4],
  [1, 4],
  [1, 4],
  ...Array.from({ length: 9 }, () => []),
  ...Array.from({ length: 5 }, () => []),
  ...Array.from({ length: 8 }, () => []),
];

function signature(
  options: { type?: OperandType; inputs?: number; inputRank?: number; merge?: OperandType } = {},
) {
  const t = options.type ?? "TENSOR_FLOAT32";
  const scalar: OperandType = t === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  const types: OperandType[] = [
    ...Array<OperandType>(48).fill(t),
    "INT32",
    scalar,
    scalar,
    options.merge ?? "BOOL",
    "BOOL",
    ...Array<OperandType>(8).fill(t),
  ];
  const dims = SHAPES.map((s) => [...s]);
  dims[0] = dims[0].slice(0, options.inputRank ?? 3);
  const inputs = types.slice(0, options.inputs ?? 61).map((type, i) => declared(type, dims[i], i));
  return {
    type: "BIDIRECTIONAL_SEQUENCE_LSTM" as const,
    inputs,
    outputs: [declared(t, [], 61), declared(t, [], 62)],
  };
}

function prepareInputs(shapes: number[][], merge: number): PrepareInput[] {
  const scalars = [4, 0, 0, merge, 1];
  return shapes.map((shape, i) => ({
    type: i >= 48 && i <= 52 ? "INT32" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: i >= 48 && i <= 52
      ? new Float32Array([scalars[i - 48]])
      : shape.length === 0
      ? null
      : new Float32Array(shape.reduce((n, d) => n * d, 1)),
  }));
}

const OUT = { type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 };

Deno.test("bidirectionalSequenceLstm.validate() accepts float32 and float16 as V1_2", () => {
  strictEqual(op.validate(signature()), "V1_2");
  strictEqual(op.validate(signature({ type: "TENSOR_FLOAT16" })), "V1_2");
});

Deno.test("bidirectionalSequenceLstm.validate() names a wrong input count", () => {
  throws(() => op.validate(signature({ inputs: 60 })), /expected 61 inputs, got 60/);
});

Deno.test("bidirectionalSequenceLstm.validate() names a wrong type", () => {
  throws(() => op.validate(signature({ type: "TENSOR_QUANT8_ASYMM" })), /unsupported type/);
  throws(() => op.validate(signature({ merge: "INT32" })), /input 51 .* type INT32/);
});

Deno.test("bidirectionalSequenceLstm.validate() names a wrong input rank", () => {
  throws(() => op.validate(signature({ inputRank: 2 })), /input \(input 0\).* rank 2, expected 3/);
});

Deno.test("bidirectionalSequenceLstm.prepare() infers separate and merged outputs", () => {
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, 0), [OUT, OUT]), [[3, 1, 4], [3, 1, 4]]);
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, 1), [OUT]), [[3, 1, 8]]);
});

Deno.test("bidirectionalSequenceLstm.prepare() rejects partial auxiliary weights", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[39] = [3, 1, 2];
  shapes[41] = [4, 2];
  throws(() => op.prepare(prepareInputs(shapes, 0), [OUT, OUT]), /auxiliary weights/);
});

Deno.test("bidirectionalSequenceLstm.prepare() names a backward weight of the wrong shape", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[19] = [4, 3];
  throws(
    () => op.prepare(prepareInputs(shapes, 0), [OUT, OUT]),
    /bw_input_to_forget_weights \(input 19\)/,
  );
});
