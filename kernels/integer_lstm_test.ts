/**
 * The integer LSTM cell on cases small enough to work by hand: gates fed only by biases or a
 * single product, so each pre-activation is an exact Q3.12 value, and states whose updates
 * follow from 0.5 = sigmoid(0) exactly. Where a value goes through the 16-bit sigmoid or
 * tanh, the expectation is the real function's, within the tolerance the comment states.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import {
  applyLayerNorm,
  type IntegerLstmCell,
  type IntegerLstmGate,
  type IntegerLstmStep,
  integerLstmStep,
} from "./integer_lstm.ts";

const Q312 = 2 ** -12;

/** A gate of zero weights and bias over `units` units (no layer norm: Q3.12 products). */
function zeroGate(units: number, inputSize: number, outputSize: number): IntegerLstmGate {
  return {
    inputWeights: { data: new Int8Array(units * inputSize), scale: 1 / 64, zeroPoint: 0 },
    recurrentWeights: { data: new Int8Array(units * outputSize), scale: 1 / 64, zeroPoint: 0 },
    bias: new Int32Array(units),
    peephole: null,
    layerNorm: null,
    intermediateScale: Q312,
  };
}

function zeroCell(units: number, inputSize: number, outputSize: number): IntegerLstmCell {
  const gate = () => zeroGate(units, inputSize, outputSize);
  return {
    inputGate: gate(),
    forgetGate: gate(),
    cellGate: gate(),
    outputGate: gate(),
    projection: null,
    cellClip: 0,
    projectionClip: 0,
    hiddenScale: 1 / 128,
    hiddenZeroPoint: 0,
  };
}

/** One batch row; input scale 1/128, cell state scale 2^-11 unless given. */
function stepOf(
  sizes: { inputSize: number; numUnits: number; outputSize: number },
  values: { input?: number[]; cellState?: number[]; cellScale?: number; outputZeroPoint?: number },
): IntegerLstmStep {
  const { inputSize, numUnits, outputSize } = sizes;
  return {
    batch: 1,
    ...sizes,
    input: {
      data: Int8Array.from(values.input ?? Array(inputSize).fill(0)),
      scale: 1 / 128,
      zeroPoint: 0,
    },
    outputStateIn: {
      data: new Int8Array(outputSize).fill(values.outputZeroPoint ?? 0),
      scale: 1 / 128,
      zeroPoint: values.outputZeroPoint ?? 0,
    },
    cellStateIn: {
      data: Int16Array.from(values.cellState ?? Array(numUnits).fill(0)),
      scale: values.cellScale ?? 2 ** -11,
      zeroPoint: 0,
    },
    outputStateOut: new Int8Array(outputSize),
    cellStateOut: new Int16Array(numUnits),
    output: new Int8Array(outputSize),
  };
}

Deno.test("integerLstmStep() with zero gates halves the cell state and outputs o * tanh(c)", () => {
  // Every gate sees 0: sigmoid(0) = 16384 (0.5) exactly, tanh(0) = 0. The new cell state is
  // round(c / 2), halves away from zero; the output round(0.5 * tanh(c' / 2048) * 128).
  const sizes = { inputSize: 2, numUnits: 4, outputSize: 4 };
  const step = stepOf(sizes, { cellState: [1000, -3, 5, -2048] });
  integerLstmStep(zeroCell(4, 2, 4), step);
  deepStrictEqual([...step.cellStateOut], [500, -2, 3, -1024]);
  // 0.5 * tanh(0.2441) * 128 = 15.32; 0.5 * tanh(-0.5) * 128 = -29.58; the others ~0.
  deepStrictEqual([...step.output], [15, 0, 0, -30]);
  deepStrictEqual([...step.outputStateOut], [...step.output]);
});

Deno.test("integerLstmStep() adds gate biases to the products without layer norm", () => {
  // Forget gate: x = 64/128 = 0.5, w = 64/64 = 1, bias 4096 at scale 1/64 x 1/128 = 0.5:
  // pre-activation 1.0, f = sigmoid(1) = 0.7311. Cell 512 (0.25) becomes 0.7311 * 512 = 374.3.
  const sizes = { inputSize: 1, numUnits: 1, outputSize: 1 };
  const cell = zeroCell(1, 1, 1);
  cell.forgetGate.inputWeights.data[0] = 64;
  cell.forgetGate.bias[0] = 4096;
  cell.hiddenScale = 1 / 64;
  const step = stepOf(sizes, { input: [64], cellState: [512] });
  integerLstmStep(cell, step);
  strictEqual(step.cellStateOut[0], 374);
  // o = 0.5, tanh(374 / 2048) = 0.1806: 0.0903 at scale 1/64 is 5.78.
  strictEqual(step.output[0], 6);
});

Deno.test("integerLstmStep() with CIFG uses 1 - forget as the input gate", () => {
  // f = 0.5 so i = 32767 - 16384; the cell gate's bias 8192 x 0.5 / 2^-12 is tanh(1.0).
  // New cell state 0.49997 * 0.76159 = 0.38078, i.e. 12477.5 at scale 2^-15; within 8 units
  // (2.4e-4), the 16-bit tanh's own error being up to 2^-10.
  const sizes = { inputSize: 1, numUnits: 1, outputSize: 1 };
  const cell = zeroCell(1, 1, 1);
  cell.inputGate = null;
  cell.cellGate.bias[0] = 8192;
  const step = stepOf(sizes, { cellScale: 2 ** -15 });
  integerLstmStep(cell, step);
  ok(Math.abs(step.cellStateOut[0] - 0.5 * Math.tanh(1) * 32768) <= 8, `${step.cellStateOut[0]}`);
});

Deno.test("integerLstmStep() clips the cell state to cell_clip", () => {
  // Zero gates halve 2000 to 1000; a clip of 0.25 at scale 2^-11 bounds it to 512.
  const step = stepOf({ inputSize: 1, numUnits: 2, outputSize: 2 }, { cellState: [2000, -2000] });
  const cell = { ...zeroCell(2, 1, 2), cellClip: 0.25 };
  integerLstmStep(cell, step);
  deepStrictEqual([...step.cellStateOut], [512, -512]);
});

Deno.test("integerLstmStep() projects around the hidden and output zero points", () => {
  // Cell state 0: hidden h = 0, stored as its zero point 10. The projection (weights 64/64,
  // bias 640 at scale 1/64 x 1/128) gives 640 / 64 = 10 at output scale 1/128, plus the
  // output zero point -5: 5. A projection clip of 0.05 (6 steps) bounds 95 to -5 + 6 = 1.
  const sizes = { inputSize: 1, numUnits: 2, outputSize: 1 };
  const run = (bias: number, projectionClip: number) => {
    const cell: IntegerLstmCell = {
      ...zeroCell(2, 1, 1),
      hiddenZeroPoint: 10,
      projectionClip,
      projection: {
        weights: { data: Int8Array.from([64, 64]), scale: 1 / 64, zeroPoint: 0 },
        bias: Int32Array.from([bias]),
      },
    };
    const step = stepOf(sizes, { outputZeroPoint: -5 });
    integerLstmStep(cell, step);
    return step.output[0];
  };
  strictEqual(run(640, 0), 5);
  strictEqual(run(6400, 0), 95);
  strictEqual(run(6400, 0.05), 1);
});

Deno.test("integerLstmStep() refuses a cell state scale that is no power of two in range", () => {
  const step = stepOf({ inputSize: 1, numUnits: 1, outputSize: 1 }, { cellScale: 2 ** -16 });
  throws(() => integerLstmStep(zeroCell(1, 1, 1), step), /not 2\^-15 \.\. 2\^-9/);
});

Deno.test("applyLayerNorm() normalizes each row, scales by the weights and adds the bias", () => {
  // [100, 200, 300, 400]: z = (v - 250) / 111.8 = [-1.342, -0.447, 0.447, 1.342]; weights
  // 4096 at scale 2^-12 are 1.0, so the Q3.12 result is 4096 z (steps of 4: within 8).
  const gate = Int16Array.from([100, 200, 300, 400, 7, 7, 7, 7]);
  const weights = { data: Int16Array.from([4096, 4096, 4096, 4096]), scale: Q312, zeroPoint: 0 };
  // A bias adds bias x weights scale / 1024: 4096 x 1024 adds 1.0 (4096) to the first unit.
  const bias = Int32Array.from([4096 * 1024, 0, 0, 0]);
  applyLayerNorm(gate, { weights, bias }, { batch: 2, units: 4 });
  const z = [-3, -1, 1, 3].map((k) => k / 2 / Math.sqrt(1.25));
  const expected = [4096 * z[0] + 4096, 4096 * z[1], 4096 * z[2], 4096 * z[3]];
  expected.forEach((e, i) => ok(Math.abs(gate[i] - e) <= 8, `unit ${i}: ${gate[i]} vs ${e}`));
  // A constant row has no variance: the guard keeps it finite and the result is the bias.
  deepStrictEqual([...gate.subarray(4)], [4096, 0, 0, 0]);
});
