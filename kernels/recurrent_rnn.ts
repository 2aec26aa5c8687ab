/**
 * Float basic RNN cell (NNAPI RNN; Android 10 `RNN::RNNStep`):
 * `output = activation(input * weights^T + hidden * recurrentWeights^T + bias)`, and the
 * new hidden state equals the output.
 */
import { activationFunction } from "./recurrent_common.ts";

/** Operands of one RNN step, all row-major float32. */
export interface RnnStepArgs {
  /** [batch, inputSize] */
  input: Float32Array;
  /** [numUnits, inputSize] */
  weights: Float32Array;
  /** [numUnits, numUnits] */
  recurrentWeights: Float32Array;
  /** [numUnits] */
  bias: Float32Array;
  /** [batch, numUnits] */
  hiddenStateIn: Float32Array;
  /** Activation code (NONE, RELU, RELU6, TANH or SIGMOID). */
  activation: number;
  batch: number;
  inputSize: number;
  numUnits: number;
  /** [batch, numUnits] */
  output: Float32Array;
  /** [batch, numUnits], receives a copy of the output. */
  hiddenStateOut: Float32Array;
}

/** One RNN time step, accumulating in the reference order (bias, input, recurrent). */
export function rnnStep(args: RnnStepArgs): void {
  const { input, weights, recurrentWeights, bias, hiddenStateIn, batch, inputSize, numUnits } =
    args;
  const f = activationFunction(args.activation);
  for (let b = 0; b < batch; b++) {
    const x = b * inputSize;
    const h = b * numUnits;
    for (let o = 0; o < numUnits; o++) {
      let acc = bias[o];
      const w = o * inputSize;
      for (let i = 0; i < inputSize; i++) acc += input[x + i] * weights[w + i];
      const r = o * numUnits;
      for (let j = 0; j < numUnits; j++) acc += hiddenStateIn[h + j] * recurrentWeights[r + j];
      args.output[h + o] = f(acc);
    }
  }
  args.hiddenStateOut.set(args.output.subarray(0, batch * numUnits));
}
