/**
 * Float SVDF (NNAPI SVDF; Android 10 `SVDF::EvalFloat32`). The state holds, per batch and
 * filter, the last `memorySize` feature activations, oldest first. One step:
 * 1. copy state_in to state_out and put this step's feature activation
 *    `weightsFeature[f, :] . input[b, :]` in the newest (last) slot of each filter;
 * 2. filter output = `weightsTime[f, :] . state_out[b, f, :]`;
 * 3. output[b, u] = bias[u] + sum over the `rank` filters of unit u, then the activation;
 * 4. shift every filter's memory left by one, zero-filling the newest slot.
 */
import { applyActivation, matrixBatchVectorMultiplyAccumulate } from "./recurrent_common.ts";

/** Operands of one SVDF step, all row-major float32. */
export interface SvdfStepArgs {
  /** [batch, inputSize] */
  input: Float32Array;
  /** [numFilters, inputSize] */
  weightsFeature: Float32Array;
  /** [numFilters, memorySize] */
  weightsTime: Float32Array;
  /** [numUnits], or null when omitted (zero bias). */
  bias: Float32Array | null;
  /** [batch, memorySize * numFilters] */
  stateIn: Float32Array;
  rank: number;
  /** Activation code (NONE, RELU, RELU6, TANH or SIGMOID). */
  activation: number;
  batch: number;
  inputSize: number;
  numFilters: number;
  memorySize: number;
  /** [batch, memorySize * numFilters] */
  stateOut: Float32Array;
  /** [batch, numFilters / rank] */
  output: Float32Array;
}

/** One SVDF time step in the reference order (state update, time filter, reduce, shift). */
export function svdfStep(args: SvdfStepArgs): void {
  const { batch, inputSize, numFilters, memorySize, rank, stateOut, output } = args;
  const numUnits = numFilters / rank;
  const stateSize = batch * memorySize * numFilters;
  stateOut.set(args.stateIn.subarray(0, stateSize));
  for (let slot = memorySize - 1; slot < stateSize; slot += memorySize) stateOut[slot] = 0;
  matrixBatchVectorMultiplyAccumulate(
    args.weightsFeature,
    numFilters,
    inputSize,
    args.input,
    batch,
    stateOut,
    memorySize - 1,
    memorySize,
  );

  const scratch = new Float32Array(batch * numFilters);
  for (let b = 0; b < batch; b++) {
    for (let f = 0; f < numFilters; f++) {
      const s = (b * numFilters + f) * memorySize;
      const w = f * memorySize;
      let acc = 0;
      for (let t = 0; t < memorySize; t++) acc += args.weightsTime[w + t] * stateOut[s + t];
      scratch[b * numFilters + f] = acc;
    }
  }

  for (let b = 0; b < batch; b++) {
    for (let u = 0; u < numUnits; u++) {
      let acc = args.bias === null ? 0 : args.bias[u];
      const first = b * numFilters + u * rank;
      for (let r = 0; r < rank; r++) acc += scratch[first + r];
      output[b * numUnits + u] = acc;
    }
  }
  applyActivation(output, output, batch * numUnits, args.activation);

  for (let s = 0; s < stateSize; s += memorySize) {
    stateOut.copyWithin(s, s + 1, s + memorySize);
    stateOut[s + memorySize - 1] = 0;
  }
}
