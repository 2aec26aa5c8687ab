import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { rnn } from "./rnn.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, inputCount = 6) {
  const inputs = Array.from(
    { length: inputCount },
    (_, i) => declared(i === 5 ? "INT32" : type, [], i),
  );
  return { type: "RNN" as const, inputs, outputs: [declared(type, [], 6), declared(type, [], 7)] };
}

function prepareInputs(shapes: number[][], activation = 1): PrepareInput[] {
  return [...shapes, []].map((shape, i) => ({
    type: i === 5 ? "INT32" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: i === 5 ? new Int32Array([activation]) : undefined,
  }));
}

const good = [[2, 8], [16, 8], [16, 16], [16], [2, 16]];

Deno.test("rnn.validate() accepts float32 as V1_0 and float16 as V1_2", () => {
  strictEqual(rnn.validate(signature("TENSOR_FLOAT32")), "V1_0");
  strictEqual(rnn.validate(signature("TENSOR_FLOAT16")), "V1_2");
});

Deno.test("rnn.validate() rejects quantized inputs and a missing activation", () => {
  throws(() => rnn.validate(signature("TENSOR_QUANT8_ASYMM")), OperationError);
  throws(() => rnn.validate(signature("TENSOR_FLOAT32", 5)), OperationError);
});

Deno.test("rnn.prepare() infers [batch, num_units] for both outputs", () => {
  deepStrictEqual(rnn.prepare(prepareInputs(good), []), [[2, 16], [2, 16]]);
});

Deno.test("rnn.prepare() rejects a bias whose size differs from the number of units", () => {
  const shapes = [...good];
  shapes[3] = [15];
  throws(() => rnn.prepare(prepareInputs(shapes), []), /bias/);
});

Deno.test("rnn.prepare() rejects a hidden state of the wrong batch", () => {
  const shapes = [...good];
  shapes[4] = [3, 16];
  throws(() => rnn.prepare(prepareInputs(shapes), []), /hidden_state_in/);
});

Deno.test("rnn.prepare() rejects the RELU1 activation the reference cannot run", () => {
  throws(() => rnn.prepare(prepareInputs(good, 2), []), /activation/);
});
