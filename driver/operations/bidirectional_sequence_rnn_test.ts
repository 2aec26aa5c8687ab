import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../../nnapi/types.ts";
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

Deno.test("bidirectionalSequenceRnn.prepare() rejects an auxiliary input without its weights", () => {
  const shapes = SHAPES.map((s) => [...s]);
  shapes[9] = [2, 16, 8];
  throws(
    () => op.prepare(prepareInputs(shapes, { merge: 0 }), [OUT, OUT]),
    /all present or all omitted/,
  );
});
