import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../../nnapi/types.ts";
import { type DeclaredOperand, type PrepareInput } from "./operation.ts";
import { unidirectionalSequenceRnn as op } from "./unidirectional_sequence_rnn.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(
  options: { type?: OperandType; inputs?: number; inputRank?: number; timeMajor?: OperandType } =
    {},
) {
  const t = options.type ?? "TENSOR_FLOAT32";
  const dims = [[2, 16, 8], [16, 8], [16, 16], [16], [2, 16]];
  dims[0] = dims[0].slice(0, options.inputRank ?? 3);
  const types: OperandType[] = [t, t, t, t, t, "INT32", options.timeMajor ?? "INT32"];
  const inputs = types.slice(0, options.inputs ?? 7).map((type, i) =>
    declared(type, dims[i] ?? [], i)
  );
  return {
    type: "UNIDIRECTIONAL_SEQUENCE_RNN" as const,
    inputs,
    outputs: [declared(t, [], 7)],
  };
}

function prepareInputs(shapes: number[][], timeMajor: number): PrepareInput[] {
  const scalars = [1, timeMajor];
  return [...shapes, [], []].map((shape, i) => ({
    type: i >= 5 ? "INT32" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: i >= 5 ? new Int32Array([scalars[i - 5]]) : undefined,
  }));
}

Deno.test("unidirectionalSequenceRnn.validate() accepts float32 and float16 as V1_2", () => {
  strictEqual(op.validate(signature()), "V1_2");
  strictEqual(op.validate(signature({ type: "TENSOR_FLOAT16" })), "V1_2");
});

Deno.test("unidirectionalSequenceRnn.validate() names a wrong input count", () => {
  throws(() => op.validate(signature({ inputs: 6 })), /expected 7 inputs, got 6/);
});

Deno.test("unidirectionalSequenceRnn.validate() names a wrong type", () => {
  throws(() => op.validate(signature({ type: "TENSOR_QUANT8_ASYMM" })), /unsupported type/);
  throws(() => op.validate(signature({ timeMajor: "BOOL" })), /input 6 .* type BOOL/);
});

Deno.test("unidirectionalSequenceRnn.validate() names a wrong input rank", () => {
  throws(() => op.validate(signature({ inputRank: 2 })), /input \(input 0\).* rank 2, expected 3/);
});

Deno.test("unidirectionalSequenceRnn.prepare() keeps the input's layout", () => {
  const shapes = [[2, 16, 8], [16, 8], [16, 16], [16], [2, 16]];
  deepStrictEqual(op.prepare(prepareInputs(shapes, 0), []), [[2, 16, 16]]);
  const timeMajor = [[16, 2, 8], [16, 8], [16, 16], [16], [2, 16]];
  deepStrictEqual(op.prepare(prepareInputs(timeMajor, 1), []), [[16, 2, 16]]);
});

Deno.test("unidirectionalSequenceRnn.prepare() rejects a hidden state of the wrong batch", () => {
  const shapes = [[2, 16, 8], [16, 8], [16, 16], [16], [3, 16]];
  throws(() => op.prepare(prepareInputs(shapes, 0), []), /hidden_state/);
});
