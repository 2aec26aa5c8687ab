import { deepStrictEqual } from "node:assert/strict";
import { rnnSequence, transposeFirstTwoDims } from "./recurrent_sequence.ts";

Deno.test("transposeFirstTwoDims() swaps batch-major and time-major rows", () => {
  const input = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  const output = new Float32Array(12);
  transposeFirstTwoDims(input, [2, 3, 2], output);
  deepStrictEqual([...output], [1, 2, 7, 8, 3, 4, 9, 10, 5, 6, 11, 12]);
});

Deno.test("rnnSequence() carries the hidden state backwards into a strided output", () => {
  // One unit, identity weights, no activation: the output accumulates the inputs.
  const output = new Float32Array(3 * 2).fill(-1);
  rnnSequence({
    input: Float32Array.from([1, 2, 3]),
    auxInput: Float32Array.from([10, 20, 30]),
    weights: Float32Array.from([1]),
    auxWeights: Float32Array.from([0.5]),
    recurrentWeights: Float32Array.from([1]),
    bias: Float32Array.from([0]),
    hiddenStateIn: Float32Array.from([100]),
    activation: 0,
    maxTime: 3,
    batch: 1,
    inputSize: 1,
    auxInputSize: 1,
    numUnits: 1,
    reverse: true,
    output,
    outputStride: 2,
    outputOffset: 1,
  });
  deepStrictEqual([...output], [-1, 136, -1, 130, -1, 118]);
});
