import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { bidirectionalSequenceRnn as op } from "./bidirectional_sequence_rnn.ts";
import { type DeclaredOperand, type PrepareInput } from "./operation.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

const CELL = [[16, 8], [16, 16], [16], [2, 16]];
const SHAPES = [[2, 16, 8], ...CELL, ...CELL, [], [], []];

function signature(
  options: { type?: OperandType; inputs?: number; inputRank?: number; merge?: OperandType } = {},
) {
  const t = options.type ?? "TENSOR_FLOAT32";
  const types: OperandType[] = [
    ...Array<OperandType>(12).fill(t),
    "INT32",
    "BOOL",
    options.merge ?? "BOOL",
  ];
  const dims = SHAPES.map((s) => [...s]);
  dims[0] = dims[0].slice(0, options.inputRank ?? 3);
  const inputs = types.slice(0, options.inputs ?? 15).map((type, i) =>
    declared(type, dims[i] ?? [], i)
  );
  return {
    type: "BIDIRECTIONAL_SEQUENCE_RNN" as const,
    inputs,
    outputs: [declared(t, [], 15), declared(t, [], 16)],
  };
}

/** An optional input's value at preparation: omitted (null) or known. */
function optionalValue(shape: number[]): Float32Array | null {
  return shape.length === 0 ? null : new Float32Array(shape.reduce((n, d) => n * d, 1));
}

function prepareInputs(shapes: number[][], options: { merge: number }): PrepareInput[] {
  const scalars = [1, 0, options.merge];
  return [...shapes, [], [], []].map((shape, i) => ({
    type: i === 12 ? "INT32" : i > 12 ? "BOOL" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: i >= 12 ? new Int32Array([scalars[i - 12]]) : i >= 9 ? optionalValue(shape) : undefined,
  }));
}

const OUT = { type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 };

Deno.test("bidirectionalSequenceRnn.validate() accepts float32 and float16 as V1_2", () => {
  strictEqual(op.validate(signature()), "V1_2");
  strictEqual(op.validate(signature({ type: "TENSOR_FLOAT16" })), "V1_2");
});

Deno.test("bidirectionalSequenceRnn.validate() names a wrong input count", () => {
  throws(() => op.validate(signature({ inputs: 14 })), /expected 15 inputs, got 14/);
});

Deno.test("bidirectionalSequenceRnn.validate() names a wrong type", () => {
  throws(() => op.validate(signature({ type: "TENSOR_INT32" })), /unsupported type/);
  throws(() => op.validate(signature({ merge: "INT32" })), /input 14 .* type INT32/);
});

Deno.test("bidirectionalSequenceRnn.validate() names a wrong input rank", () => {
  throws(() => op.validate(signature({ inputRank: 2 })), /input \(input 0\).* rank 2, expected 3/);
});

Deno.test("bidirectionalSequenceRnn.prepare() infers separate and merged outputs", () => {
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, { merge: 0 }), [OUT, OUT]), [
    [2, 16, 16],
    [2, 16, 16],
  ]);
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, { merge: 1 }), [OUT]), [[2, 16, 32]]);
});

Deno.test("bidirectionalSequenceRnn.prepare() rejects an output count that contradicts merge_outputs", () => {
  throws(() => op.prepare(prepareInputs(SHAPES, { merge: 1 }), [OUT, OUT]), /expected 1 outputs/);
});

Deno.test("bidirectionalSequenceRnn.prepare() rejects auxiliary weights without their input", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[10] = [16, 8];
  shapes[11] = [16, 8];
  throws(
    () => op.prepare(prepareInputs(shapes, { merge: 0 }), [OUT, OUT]),
    /only aux_input present \(parallel linking\)/,
  );
  const oneSided = SHAPES.map((s) => [...s]);
  oneSided[9] = [2, 16, 8];
  oneSided[10] = [16, 8];
  throws(
    () => op.prepare(prepareInputs(oneSided, { merge: 0 }), [OUT, OUT]),
    /got only fw_aux_weights and aux_input/,
  );
});

Deno.test("bidirectionalSequenceRnn.validate() is V1_3 with state outputs or parallel linking", () => {
  const base = signature();
  const outputs = (n: number) =>
    Array.from({ length: n }, (_, k) => declared("TENSOR_FLOAT32", [], 15 + k));
  strictEqual(op.validate({ ...base, outputs: outputs(4) }), "V1_3");
  strictEqual(op.validate({ ...base, outputs: outputs(3) }), "V1_3");
  strictEqual(op.validate({ ...base, outputs: outputs(1) }), "V1_2");
  throws(() => op.validate({ ...base, outputs: outputs(5) }), /expected 1 or 2 or 3 or 4 outputs/);
  const omit = (indexes: number[]) => ({
    ...base,
    inputs: base.inputs.map((o, i) =>
      indexes.includes(i) ? { ...o, lifetime: "NO_VALUE" as const } : o
    ),
  });
  strictEqual(op.validate(omit([10, 11])), "V1_3");
  strictEqual(op.validate(omit([9, 10, 11])), "V1_2");
});

Deno.test("bidirectionalSequenceRnn.prepare() shapes the final states and the parallel backward cell", () => {
  deepStrictEqual(op.prepare(prepareInputs(SHAPES, { merge: 1 }), [OUT, OUT, OUT]), [
    [2, 16, 32],
    [2, 16],
    [2, 16],
  ]);
  throws(
    () => op.prepare(prepareInputs(SHAPES, { merge: 0 }), [OUT, OUT, OUT]),
    /expected 2 outputs, or 4 with the final states, with merge_outputs false/,
  );
  // Parallel linking: aux_input [2, 16, 3] replaces the backward input, so bw_weights are
  // [16, 3]; [16, 8] (the regular input's size) is then wrong and named.
  const parallel = SHAPES.map((s) => [...s]);
  parallel[9] = [2, 16, 3];
  parallel[5] = [16, 3];
  deepStrictEqual(op.prepare(prepareInputs(parallel, { merge: 0 }), [OUT, OUT]), [
    [2, 16, 16],
    [2, 16, 16],
  ]);
  parallel[5] = [16, 8];
  throws(
    () => op.prepare(prepareInputs(parallel, { merge: 0 }), [OUT, OUT]),
    /bw_weights \(input 5\) has input size 8, expected 3/,
  );
});

Deno.test("bidirectionalSequenceRnn.execute() runs the backward cell on aux_input in parallel linking", () => {
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
    data: type === "INT32" ? Int32Array.of(value) : Uint8Array.of(value),
  });
  // Batch-major, batch 1, 3 steps, no activation. Forward: h = 2 x + 0.5 h + 1 over x = 1, 2, 3
  // gives 3, 6.5, 10.25. Backward over aux rows (1, 0), (0, 1), (2, 2) from the last, with
  // h = (1, -1) . a + 0.5 h: (2, 2) gives 0, (0, 1) gives -1, (1, 0) gives 1 - 0.5 = 0.5.
  const inputs = [
    f32([1, 3, 1], [1, 2, 3]),
    f32([1, 1], [2]),
    f32([1, 1], [0.5]),
    f32([1], [1]),
    f32([1, 1], [0]),
    f32([1, 2], [1, -1]),
    f32([1, 1], [0.5]),
    f32([1], [0]),
    f32([1, 1], [0]),
    f32([1, 3, 2], [1, 0, 0, 1, 2, 2]),
    f32([], null),
    f32([], null),
    scalar("INT32", 0),
    scalar("BOOL", 0),
    scalar("BOOL", 0),
  ];
  const outputs = [[1, 3, 1], [1, 3, 1], [1, 1], [1, 1]].map((shape) =>
    f32(shape, Array(shape.reduce((n, d) => n * d, 1)).fill(NaN))
  );
  op.execute(inputs, outputs);
  deepStrictEqual(outputs.map((o) => [...o.data as Float32Array]), [
    [3, 6.5, 10.25],
    [0.5, -1, 0],
    [10.25],
    [0.5],
  ]);
});
