import { deepStrictEqual } from "node:assert/strict";
import { rnnStep } from "./recurrent_rnn.ts";

Deno.test("rnnStep() computes activation(W x + R h + b) and copies it to the hidden state", () => {
  const output = new Float32Array(4);
  const hiddenStateOut = new Float32Array(4);
  rnnStep({
    input: new Float32Array([1, 2, -1, 0]), // batch 2, input size 2
    weights: new Float32Array([1, 0, 0, 1]), // identity
    recurrentWeights: new Float32Array([0, 1, 1, 0]), // swap
    bias: new Float32Array([0.5, -10]),
    hiddenStateIn: new Float32Array([3, 4, 5, 6]),
    activation: 1, // RELU
    batch: 2,
    inputSize: 2,
    numUnits: 2,
    output,
    hiddenStateOut,
  });
  // batch 0: [1 + 4 + 0.5, 2 + 3 - 10] ; batch 1: [-1 + 6 + 0.5, 0 + 5 - 10]
  deepStrictEqual(Array.from(output), [5.5, 0, 5.5, 0]);
  deepStrictEqual(Array.from(hiddenStateOut), Array.from(output));
});
