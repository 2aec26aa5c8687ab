import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
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

const OUT = { type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 };

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
  deepStrictEqual(op.prepare(prepareInputs(shapes, 0), [OUT]), [[2, 16, 16]]);
  const timeMajor = [[16, 2, 8], [16, 8], [16, 16], [16], [2, 16]];
  deepStrictEqual(op.prepare(prepareInputs(timeMajor, 1), [OUT]), [[16, 2, 16]]);
});

Deno.test("unidirectionalSequenceRnn.prepare() rejects a hidden state of the wrong batch", () => {
  const shapes = [[2, 16, 8], [16, 8], [16, 16], [16], [3, 16]];
  throws(() => op.prepare(prepareInputs(shapes, 0), [OUT]), /hidden_state/);
});

Deno.test("unidirectionalSequenceRnn.validate() takes the final hidden state output as V1_3", () => {
  const withState = {
    ...signature(),
    outputs: [declared("TENSOR_FLOAT32", [], 7), declared("TENSOR_FLOAT32", [2, 16], 8)],
  };
  strictEqual(op.validate(withState), "V1_3");
  const f16 = signature({ type: "TENSOR_FLOAT16" });
  strictEqual(
    op.validate({ ...f16, outputs: [...f16.outputs, declared("TENSOR_FLOAT16", [], 8)] }),
    "V1_3",
  );
  throws(
    () =>
      op.validate({
        ...withState,
        outputs: [...withState.outputs, declared("TENSOR_FLOAT32", [], 9)],
      }),
    /expected 1 or 2 outputs, got 3/,
  );
  throws(
    () =>
      op.validate({
        ...withState,
        outputs: [withState.outputs[0], declared("TENSOR_FLOAT16", [], 8)],
      }),
    /output 1 \(operand 8\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
  throws(
    () =>
      op.validate({
        ...withState,
        outputs: [withState.outputs[0], declared("TENSOR_FLOAT32", [2, 16, 1], 8)],
      }),
    /output 1 \(final hidden state\) \(operand 8\) has rank 3, expected 2/,
  );
});

Deno.test("unidirectionalSequenceRnn.prepare() shapes the final hidden state [batch, units]", () => {
  const shapes = [[2, 16, 8], [16, 8], [16, 16], [16], [2, 16]];
  deepStrictEqual(op.prepare(prepareInputs(shapes, 0), [OUT, OUT]), [[2, 16, 16], [2, 16]]);
  throws(
    () => op.prepare(prepareInputs(shapes, 0), [OUT, OUT, OUT]),
    /expected 1 outputs, or 2 with the final states/,
  );
});

/** A float32 tensor. */
function f32(shape: number[], values: number[]): Tensor {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, data: Float32Array.from(values) };
}

function int32(value: number): Tensor {
  return { type: "INT32", shape: [], scale: 0, zeroPoint: 0, data: Int32Array.of(value) };
}

Deno.test("unidirectionalSequenceRnn.execute() writes the hidden state after the last step", () => {
  // One unit, input size 1: h_t = 2 x_t + 0.5 h_(t-1) + 1, no activation, h_0 = 0.
  // Batch 0 reads 1, 2, 3: h = 3, 6.5, 10.25. Batch 1 reads 0, 0, 1: h = 1, 1.5, 3.75.
  const cell = [f32([1, 1], [2]), f32([1, 1], [0.5]), f32([1], [1]), f32([2, 1], [0, 0])];
  const batchMajor = f32([2, 3, 1], [1, 2, 3, 0, 0, 1]);
  const output = f32([2, 3, 1], [0, 0, 0, 0, 0, 0]);
  const state = f32([2, 1], [0, 0]);
  op.execute([batchMajor, ...cell, int32(0), int32(0)], [output, state]);
  deepStrictEqual([...output.data as Float32Array], [3, 6.5, 10.25, 1, 1.5, 3.75]);
  deepStrictEqual([...state.data as Float32Array], [10.25, 3.75]);
  // The same sequence time-major, in float16: the state is the last step's output.
  const f16 = (t: Tensor): Tensor => ({
    ...t,
    type: "TENSOR_FLOAT16",
    data: Float16Array.from(t.data as Float32Array),
  });
  const timeMajor = f16(f32([3, 2, 1], [1, 0, 2, 0, 3, 1]));
  const state16 = f16(f32([2, 1], [0, 0]));
  op.execute([timeMajor, ...cell.map(f16), int32(0), int32(1)], [
    f16(f32([3, 2, 1], [0, 0, 0, 0, 0, 0])),
    state16,
  ]);
  deepStrictEqual([...state16.data as Float16Array], [10.25, 3.75]);
});
