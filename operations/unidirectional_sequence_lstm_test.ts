import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
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

const OUT = { type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 };

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
  deepStrictEqual(op.prepare(prepareInputs(SHAPES), [OUT]), [[3, 2, 3]]);
  const batchMajor = SHAPES.map((s) => [...s]);
  batchMajor[0] = [2, 3, 5];
  deepStrictEqual(op.prepare(prepareInputs(batchMajor, 0), [OUT]), [[2, 3, 3]]);
});

Deno.test("unidirectionalSequenceLstm.prepare() rejects an input gate bias under CIFG", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[12] = [4];
  throws(() => op.prepare(prepareInputs(shapes), [OUT]), /input_gate_bias \(input 12\)/);
});

Deno.test("unidirectionalSequenceLstm.prepare() rejects a partial layer normalization", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[25] = [4];
  throws(() => op.prepare(prepareInputs(shapes), [OUT]), /layer normalization/);
});

Deno.test("unidirectionalSequenceLstm.validate() takes the two final state outputs as V1_3", () => {
  const base = signature();
  const states = [declared("TENSOR_FLOAT32", [2, 3], 29), declared("TENSOR_FLOAT32", [2, 4], 30)];
  strictEqual(op.validate({ ...base, outputs: [...base.outputs, ...states] }), "V1_3");
  throws(
    () => op.validate({ ...base, outputs: [...base.outputs, states[0]] }),
    /expected 1 or 3 outputs, got 2/,
  );
  throws(
    () =>
      op.validate({
        ...base,
        outputs: [...base.outputs, states[0], declared("TENSOR_FLOAT16", [2, 4], 30)],
      }),
    /output 2 \(operand 30\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
  throws(
    () =>
      op.validate({
        ...base,
        outputs: [...base.outputs, states[0], declared("TENSOR_FLOAT32", [8], 30)],
      }),
    /output 2 \(final cell state\) \(operand 30\) has rank 1, expected 2/,
  );
});

Deno.test("unidirectionalSequenceLstm.prepare() shapes the states [batch, output] and [batch, cells]", () => {
  deepStrictEqual(op.prepare(prepareInputs(SHAPES), [OUT, OUT, OUT]), [[3, 2, 3], [2, 3], [2, 4]]);
  throws(() => op.prepare(prepareInputs(SHAPES), [OUT, OUT]), /expected 1 outputs, or 3/);
});

/**
 * One CIFG cell on one input: forget and output gates sigmoid(0) = 0.5, input gate
 * 1 - 0.5, cell gate tanh(x + 0.5 h), tanh activation: c_t = 0.5 c + 0.5 tanh(x_t + 0.5 h),
 * h_t = 0.5 tanh(c_t). The 28 inputs for a time-major sequence and initial states.
 */
function tinyLstmInputs(
  sequence: number[],
  states: { h: number; c: number },
): Tensor[] {
  const f32 = (shape: number[], values: number[] | null): Tensor => ({
    type: "TENSOR_FLOAT32",
    shape: values === null ? [] : shape,
    scale: 0,
    zeroPoint: 0,
    data: values === null ? null : Float32Array.from(values),
  });
  const scalar = (type: OperandType, value: number): Tensor => ({
    type,
    shape: [],
    scale: 0,
    zeroPoint: 0,
    data: type === "FLOAT32" ? Float32Array.of(value) : Int32Array.of(value),
  });
  const w = (v: number) => f32([1, 1], [v]);
  const b = (v: number) => f32([1], [v]);
  const none = f32([], null);
  return [
    f32([sequence.length, 1, 1], sequence),
    none, // input_to_input (CIFG)
    w(0),
    w(1),
    w(0),
    none, // recurrent_to_input (CIFG)
    w(0),
    w(0.5),
    w(0),
    none,
    none,
    none, // no peephole
    none, // input gate bias (CIFG)
    b(0),
    b(0),
    b(0),
    none,
    none, // no projection
    f32([1, 1], [states.h]),
    f32([1, 1], [states.c]),
    scalar("INT32", 4),
    scalar("FLOAT32", 0),
    scalar("FLOAT32", 0),
    { type: "BOOL", shape: [], scale: 0, zeroPoint: 0, data: Uint8Array.of(1) },
    none,
    none,
    none,
    none,
  ];
}

function runTinyLstm(sequence: number[], states = { h: 0, c: 0 }) {
  const out = (shape: number[]): Tensor => ({
    type: "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    data: new Float32Array(shape.reduce((n, d) => n * d, 1)),
  });
  const outputs = [out([sequence.length, 1, 1]), out([1, 1]), out([1, 1])];
  op.execute(tinyLstmInputs(sequence, states), outputs);
  const [output, h, c] = outputs.map((o) => [...o.data as Float32Array]);
  return { output, h: h[0], c: c[0] };
}

function near(actual: number, expected: number, what: string) {
  ok(Math.abs(actual - expected) <= 1e-6, `${what}: ${actual}, expected ${expected}`);
}

Deno.test("unidirectionalSequenceLstm.execute() writes the output and cell states after the last step", () => {
  const c1 = 0.5 * Math.tanh(1);
  const h1 = 0.5 * Math.tanh(c1);
  const c2 = 0.5 * c1 + 0.5 * Math.tanh(2 + 0.5 * h1);
  const h2 = 0.5 * Math.tanh(c2);
  const run = runTinyLstm([1, 2]);
  near(run.output[0], h1, "output at step 0");
  near(run.output[1], h2, "output at step 1");
  near(run.h, h2, "final output state");
  near(run.c, c2, "final cell state");
  // The states let the sequence be split: step 0, then step 1 from its states.
  const first = runTinyLstm([1]);
  const second = runTinyLstm([2], { h: first.h, c: first.c });
  deepStrictEqual([second.h, second.c], [run.h, run.c]);
});
