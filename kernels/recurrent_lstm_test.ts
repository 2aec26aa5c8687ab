import { deepStrictEqual, ok } from "node:assert/strict";
import { lstmStep, type LstmWeights } from "./recurrent_lstm.ts";

const f = (...v: number[]) => new Float32Array(v);
const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));

/** A one-cell, one-input LSTM without optional parts. */
function basicWeights(): LstmWeights {
  return {
    inputToInput: f(0.5),
    inputToForget: f(-0.25),
    inputToCell: f(1),
    inputToOutput: f(0.75),
    recurrentToInput: f(0.1),
    recurrentToForget: f(0.2),
    recurrentToCell: f(-0.3),
    recurrentToOutput: f(0.4),
    cellToInput: null,
    cellToForget: null,
    cellToOutput: null,
    inputGateBias: f(0.01),
    forgetGateBias: f(1),
    cellBias: f(0),
    outputGateBias: f(-0.1),
    projectionWeights: null,
    projectionBias: null,
    inputLayerNorm: null,
    forgetLayerNorm: null,
    cellLayerNorm: null,
    outputLayerNorm: null,
  };
}

function run(w: LstmWeights, cellClip = 0, nOutput = 1) {
  const useCifg = w.inputToInput === null;
  const outputs = {
    scratch: new Float32Array(useCifg ? 3 : 4),
    outputStateOut: new Float32Array(nOutput),
    cellStateOut: new Float32Array(1),
    output: new Float32Array(nOutput),
  };
  lstmStep(
    w,
    { nBatch: 1, nInput: 1, nCell: 1, nOutput, activation: 4, cellClip, projClip: 0 },
    { input: f(2), outputStateIn: new Float32Array(nOutput).fill(0.5), cellStateIn: f(-1) },
    outputs,
  );
  return outputs;
}

function close(actual: number, expected: number) {
  ok(Math.abs(actual - expected) < 1e-6, `${actual} != ${expected}`);
}

Deno.test("lstmStep() follows the LSTM equations for a plain cell", () => {
  const { cellStateOut, output, outputStateOut } = run(basicWeights());
  const i = sigmoid(0.01 + 0.5 * 2 + 0.1 * 0.5);
  const fg = sigmoid(1 - 0.25 * 2 + 0.2 * 0.5);
  const g = Math.tanh(2 - 0.3 * 0.5);
  const o = sigmoid(-0.1 + 0.75 * 2 + 0.4 * 0.5);
  const c = fg * -1 + i * g;
  close(cellStateOut[0], c);
  close(output[0], o * Math.tanh(c));
  deepStrictEqual(outputStateOut, output);
});

Deno.test("lstmStep() couples the input gate to the forget gate under CIFG", () => {
  const w = { ...basicWeights(), inputToInput: null, recurrentToInput: null, inputGateBias: null };
  const { cellStateOut } = run(w);
  const fg = sigmoid(1 - 0.25 * 2 + 0.2 * 0.5);
  close(cellStateOut[0], fg * -1 + (1 - fg) * Math.tanh(2 - 0.3 * 0.5));
});

Deno.test("lstmStep() adds peepholes from the old cell to input/forget and the new cell to output", () => {
  const w = { ...basicWeights(), cellToInput: f(0.3), cellToForget: f(-0.2), cellToOutput: f(0.6) };
  const { cellStateOut, output } = run(w);
  const i = sigmoid(0.01 + 0.5 * 2 + 0.1 * 0.5 + 0.3 * -1);
  const fg = sigmoid(1 - 0.25 * 2 + 0.2 * 0.5 - 0.2 * -1);
  const c = fg * -1 + i * Math.tanh(2 - 0.3 * 0.5);
  const o = sigmoid(-0.1 + 0.75 * 2 + 0.4 * 0.5 + 0.6 * c);
  close(cellStateOut[0], c);
  close(output[0], o * Math.tanh(c));
});

Deno.test("lstmStep() clips the cell state", () => {
  const w = { ...basicWeights(), cellBias: f(50), inputGateBias: f(50), forgetGateBias: f(-50) };
  const { cellStateOut } = run(w, 0.25);
  close(cellStateOut[0], 0.25);
});

Deno.test("lstmStep() projects the gated output with weights and bias", () => {
  const w = { ...basicWeights(), projectionWeights: f(2, -1), projectionBias: f(0.5, 0) };
  const plain = run(basicWeights()).output[0];
  const w2 = { ...w, recurrentToInput: f(0.1, 0), recurrentToForget: f(0.2, 0) };
  const w3 = { ...w2, recurrentToCell: f(-0.3, 0), recurrentToOutput: f(0.4, 0) };
  const { output } = run(w3, 0, 2);
  close(output[0], 0.5 + 2 * plain);
  close(output[1], -plain);
});
