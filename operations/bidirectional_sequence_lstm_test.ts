import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
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

/** The signature with `count` outputs and the auxiliary operands declared as given. */
function withOutputs(count: number, aux: { input: boolean; weights: boolean } = {
  input: true,
  weights: true,
}) {
  const base = signature();
  const inputs = base.inputs.map((operand, i) => {
    const omitted = (i === 39 && !aux.input) || (i >= 40 && i <= 47 && !aux.weights);
    return omitted ? { ...operand, lifetime: "NO_VALUE" as const } : operand;
  });
  const outputs = Array.from({ length: count }, (_, k) => declared("TENSOR_FLOAT32", [], 61 + k));
  return { ...base, inputs, outputs };
}

Deno.test("bidirectionalSequenceLstm.validate() is V1_3 with state outputs or parallel linking", () => {
  strictEqual(op.validate(withOutputs(6)), "V1_3");
  strictEqual(op.validate(withOutputs(5)), "V1_3");
  strictEqual(op.validate(withOutputs(1)), "V1_2");
  // Parallel linking: an auxiliary input with every auxiliary weight omitted.
  strictEqual(op.validate(withOutputs(2, { input: true, weights: false })), "V1_3");
  strictEqual(op.validate(withOutputs(2, { input: false, weights: false })), "V1_2");
  throws(() => op.validate(withOutputs(3)), /expected 1 or 2 or 5 or 6 outputs, got 3/);
  const mixed = withOutputs(6);
  mixed.outputs[4] = declared("TENSOR_FLOAT16", [], 65);
  throws(() => op.validate(mixed), /output 4 \(operand 65\) has type TENSOR_FLOAT16/);
});

Deno.test("bidirectionalSequenceLstm.prepare() shapes the four final states", () => {
  const six = Array(6).fill(OUT);
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, 0), six), [
    [3, 1, 4],
    [3, 1, 4],
    [1, 4],
    [1, 4],
    [1, 4],
    [1, 4],
  ]);
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, 1), six.slice(1)), [
    [3, 1, 8],
    [1, 4],
    [1, 4],
    [1, 4],
    [1, 4],
  ]);
  throws(
    () => op.prepare(prepareInputs(SHAPES, 1), six),
    /expected 1 outputs, or 5 with the final states, with merge_outputs true/,
  );
});

/**
 * Inputs of two one-cell CIFG LSTMs (forget and output gates sigmoid(0) = 0.5, input gate
 * 0.5, cell gate tanh(w . x + 0.5 h), tanh activation), time-major, batch 1, merged outputs,
 * in parallel linking: the forward cell reads `sequence` (size 1, w = 1), the backward cell
 * the auxiliary `aux` (size 2, w = [1, -1]), with no auxiliary weights.
 */
function parallelInputs(sequence: number[], aux: number[]): Tensor[] {
  const f32 = (shape: number[], values: number[] | null): Tensor => ({
    type: "TENSOR_FLOAT32",
    shape: values === null ? [] : shape,
    scale: 0,
    zeroPoint: 0,
    data: values === null ? null : Float32Array.from(values),
  });
  const none = f32([], null);
  const cell = (inputToCell: number[]) => [
    none, // input_to_input (CIFG)
    f32([1, inputToCell.length], inputToCell.map(() => 0)),
    f32([1, inputToCell.length], inputToCell),
    f32([1, inputToCell.length], inputToCell.map(() => 0)),
    none, // recurrent_to_input (CIFG)
    f32([1, 1], [0]),
    f32([1, 1], [0.5]),
    f32([1, 1], [0]),
    none,
    none,
    none,
    none,
    f32([1], [0]),
    f32([1], [0]),
    f32([1], [0]),
    none,
    none,
  ];
  const scalar = (data: Tensor["data"], type: OperandType): Tensor => ({
    type,
    shape: [],
    scale: 0,
    zeroPoint: 0,
    data,
  });
  const zero = () => f32([1, 1], [0]);
  return [
    f32([sequence.length, 1, 1], sequence),
    ...cell([1]),
    ...cell([1, -1]),
    zero(),
    zero(),
    zero(),
    zero(),
    f32([sequence.length, 1, 2], aux),
    ...Array.from({ length: 8 }, () => none),
    scalar(Int32Array.of(4), "INT32"),
    scalar(Float32Array.of(0), "FLOAT32"),
    scalar(Float32Array.of(0), "FLOAT32"),
    scalar(Uint8Array.of(1), "BOOL"), // merge_outputs
    scalar(Uint8Array.of(1), "BOOL"), // time_major
    ...Array.from({ length: 8 }, () => none),
  ];
}

Deno.test("bidirectionalSequenceLstm.execute() feeds aux_input to the backward cell and writes the states", () => {
  const outputs = [[2, 1, 2], [1, 1], [1, 1], [1, 1], [1, 1]].map((shape): Tensor => ({
    type: "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    data: new Float32Array(shape.reduce((n, d) => n * d, 1)),
  }));
  op.execute(parallelInputs([1, 2], [3, 1, 0, 2]), outputs);
  // Forward over 1, 2 (by hand, as in the unidirectional test).
  const c1 = 0.5 * Math.tanh(1);
  const h1 = 0.5 * Math.tanh(c1);
  const c2 = 0.5 * c1 + 0.5 * Math.tanh(2 + 0.5 * h1);
  const h2 = 0.5 * Math.tanh(c2);
  // Backward over the auxiliary steps from the last: (0, 2) gives 0 - 2, then (3, 1) gives 2.
  const cb1 = 0.5 * Math.tanh(-2);
  const hb1 = 0.5 * Math.tanh(cb1);
  const cb0 = 0.5 * cb1 + 0.5 * Math.tanh(2 + 0.5 * hb1);
  const hb0 = 0.5 * Math.tanh(cb0);
  const expected = [[h1, hb0, h2, hb1], [h2], [c2], [hb0], [cb0]];
  outputs.forEach((output, k) =>
    expected[k].forEach((e, i) => {
      const actual = (output.data as Float32Array)[i];
      ok(Math.abs(actual - e) <= 1e-6, `output ${k} element ${i}: ${actual}, expected ${e}`);
    })
  );
});
