import { deepStrictEqual } from "node:assert/strict";
import { svdfStep } from "./recurrent_svdf.ts";

function step(stateIn: number[], input: number[], bias: Float32Array | null) {
  const stateOut = new Float32Array(3);
  const output = new Float32Array(1);
  svdfStep({
    input: new Float32Array(input),
    weightsFeature: new Float32Array([2]), // 1 filter, input size 1
    weightsTime: new Float32Array([1, 10, 100]), // memory size 3
    bias,
    stateIn: new Float32Array(stateIn),
    rank: 1,
    activation: 0,
    batch: 1,
    inputSize: 1,
    numFilters: 1,
    memorySize: 3,
    stateOut,
    output,
  });
  return { state: Array.from(stateOut), output: output[0] };
}

Deno.test("svdfStep() filters the memory including the new activation, then shifts it left", () => {
  // Memory [a, b, (newest)] = [3, 4, 2 * 5]; the stale newest slot 7 is overwritten.
  const { state, output } = step([3, 4, 7], [5], null);
  deepStrictEqual(output, 3 * 1 + 4 * 10 + 10 * 100);
  deepStrictEqual(state, [4, 10, 0]);
});

Deno.test("svdfStep() starts the output from the bias when present", () => {
  deepStrictEqual(step([0, 0, 0], [1], new Float32Array([0.5])).output, 200.5);
});

Deno.test("svdfStep() sums the rank filters of each unit", () => {
  const output = new Float32Array(1);
  svdfStep({
    input: new Float32Array([1]),
    weightsFeature: new Float32Array([1, 2]), // 2 filters = 1 unit x rank 2
    weightsTime: new Float32Array([1, 1]), // memory size 1
    bias: null,
    stateIn: new Float32Array(2),
    rank: 2,
    activation: 0,
    batch: 1,
    inputSize: 1,
    numFilters: 2,
    memorySize: 1,
    stateOut: new Float32Array(2),
    output,
  });
  deepStrictEqual(output[0], 3);
});
