/**
 * What the float recurrent operations share (RNN, SVDF, LSTM and their sequence forms; Android 10 `RNN::Prepare`,
 * `SVDF::Prepare`, `LSTMCell::Prepare`): float32 tensors (float16 since HAL 1.2, run in
 * float32 as Android 10 does), fixed ranks, an activation the reference `ActivationFunctor`
 * implements, and optional operands that are absent when omitted or empty.
 */
import { isSupportedActivation } from "../../kernels/recurrent_common.ts";
import { transposeFirstTwoDims } from "../../kernels/recurrent_sequence.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../../kernels/typed_arrays.ts";
import { elementCount, type Tensor, type TensorInfo } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import {
  check,
  checkRank,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  ValueNotYetKnown,
} from "../operation.ts";
import { checkInputType } from "./operand_types.ts";
import { knownScalar } from "./scalars.ts";

/** The type of input 0 (TENSOR_FLOAT32 or TENSOR_FLOAT16), which every tensor shares. */
export function recurrentTensorType(signature: OperationSignature): OperandType {
  checkInputType(signature.inputs[0], 0, ["TENSOR_FLOAT32", "TENSOR_FLOAT16"]);
  return signature.inputs[0].type;
}

/** The HAL version of a float recurrent operation: float16 needs HAL 1.2. */
export function recurrentVersion(tensorType: OperandType): HalVersion {
  return tensorType === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
}

/** Checks the declared ranks of the inputs listed as [position, rank]; `names` names them. */
export function checkInputRanks(
  signature: OperationSignature,
  names: readonly string[],
  ranks: readonly (readonly [number, number])[],
): void {
  for (const [index, rank] of ranks) {
    checkRank(
      signature.inputs[index],
      `${names[index]} (input ${index})`,
      (r) => r === rank,
      `${rank}`,
    );
  }
}

/** The shape of input `index` at preparation, which must have rank `rank`. */
export function rankedShape(
  inputs: readonly PrepareInput[],
  index: number,
  options: { name: string; rank: number },
): readonly number[] {
  const shape = inputs[index].shape;
  check(
    shape.length === options.rank,
    `${options.name} (input ${index}) has rank ${shape.length}, expected ${options.rank}`,
  );
  return shape;
}

/** Checks the activation input at `position` at preparation when its value is known. */
export function checkKnownActivation(inputs: readonly PrepareInput[], position: number): void {
  const code = knownScalar(inputs[position]);
  if (code !== undefined) {
    check(isSupportedActivation(code), `unsupported activation ${code} (input ${position})`);
  }
}

/** The activation code of an executing call (input `position`), checked. */
export function activationOf(inputs: readonly Tensor[], position: number): number {
  const code = scalarOf(inputs[position]);
  check(isSupportedActivation(code), `unsupported activation ${code} (input ${position})`);
  return code;
}

/**
 * Work of one time step: each batch row (dim 0 of input 0) multiplies every weight matrix
 * at `weights` (an omitted one counts nothing), plus the element-wise gate and state
 * updates, counted as the outputs' elements.
 */
export function recurrentStepCost(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
  weights: readonly number[],
): number {
  const batch = inputs[0].shape[0] ?? 1;
  let macs = 0;
  for (const w of weights) if (inputs[w].value !== null) macs += elementCount(inputs[w].shape);
  return batch * macs + outputs.reduce((n, o) => n + elementCount(o.shape), 0);
}

/** Whether an optional input is present; unknown (throws) before execution for model inputs. */
export function isPresent(input: PrepareInput): boolean {
  if (input.value === undefined) throw new ValueNotYetKnown();
  return input.value !== null && input.value.length > 0;
}

/** The data of a required float tensor as float32. */
export function float32Of(tensor: Tensor): Float32Array {
  return toFloat32(tensor.data as FloatData);
}

/** The data of an optional float tensor as float32; null when omitted, empty or absent. */
export function optionalFloat32Of(tensor: Tensor | undefined): Float32Array | null {
  const data = tensor?.data as FloatData | null | undefined;
  return data === null || data === undefined || data.length === 0 ? null : toFloat32(data);
}

/** Runs `compute` on float32 views of the output tensors (narrowed back into float16 ones). */
export function withFloat32OutputTensors(
  outputs: readonly Tensor[],
  compute: (outputs: Float32Array[]) => void,
): void {
  withFloat32Outputs(outputs.map((o) => o.data as FloatData), compute);
}

/**
 * Checks one basic RNN cell: weights [units, inputSize], recurrent_weights [units, units],
 * bias [units] and hidden state [batch, units], at the four positions from `first`. Returns
 * the number of units. RNN and both sequence RNNs share it.
 */
export function checkRnnCell(
  inputs: readonly PrepareInput[],
  first: number,
  options: { names: readonly string[]; batch: number; inputSize: number },
): number {
  const { names, batch, inputSize } = options;
  const [weights, recurrent, bias, hidden] = [first, first + 1, first + 2, first + 3];
  const dims = (index: number, rank: number) =>
    rankedShape(inputs, index, { name: names[index], rank });
  const what = (index: number) => `${names[index]} (input ${index})`;
  const [numUnits, weightsInputSize] = dims(weights, 2);
  const recurrentShape = dims(recurrent, 2);
  const [biasSize] = dims(bias, 1);
  const hiddenShape = dims(hidden, 2);
  check(
    weightsInputSize === inputSize,
    `${what(weights)} has input size ${weightsInputSize}, expected ${inputSize}`,
  );
  check(biasSize === numUnits, `${what(bias)} has size ${biasSize}, expected ${numUnits}`);
  check(
    recurrentShape[0] === numUnits && recurrentShape[1] === numUnits,
    `${what(recurrent)} is [${recurrentShape.join(",")}], expected [${numUnits},${numUnits}]`,
  );
  check(
    hiddenShape[0] === batch && hiddenShape[1] === numUnits,
    `${what(hidden)} is [${hiddenShape.join(",")}], expected [${batch},${numUnits}]`,
  );
  return numUnits;
}

/** How a sequence operation lays out its [maxTime, batch, *] or [batch, maxTime, *] tensors. */
export interface SequenceLayout {
  timeMajor: boolean;
  maxTime: number;
  batch: number;
}

/** The layout of a sequence whose input has shape `shape`. */
export function sequenceLayout(shape: readonly number[], timeMajor: boolean): SequenceLayout {
  const [maxTime, batch] = timeMajor ? [shape[0], shape[1]] : [shape[1], shape[0]];
  return { timeMajor, maxTime, batch };
}

/** The shape of a sequence output of `units` per step, in the input's layout. */
export function sequenceShape(layout: SequenceLayout, units: number): number[] {
  const { maxTime, batch } = layout;
  return layout.timeMajor ? [maxTime, batch, units] : [batch, maxTime, units];
}

/** `data` ([*, *, inner] in `layout`) as time-major: the sequence kernels read only that. */
export function toTimeMajor(
  data: Float32Array,
  layout: SequenceLayout,
  inner: number,
): Float32Array {
  if (layout.timeMajor) return data;
  const transposed = new Float32Array(data.length);
  transposeFirstTwoDims(data, [layout.batch, layout.maxTime, inner], transposed);
  return transposed;
}

/**
 * Hands `run` float32 views of the outputs: the first `units.length` are sequences (of
 * `units[i]` per step), seen time-major and transposed back into a batch-major layout
 * afterwards; any further ones (HAL 1.3's final states, [batch, *]) are passed as they are.
 */
export function withTimeMajorOutputs(
  outputs: readonly Tensor[],
  options: { layout: SequenceLayout; units: readonly number[] },
  run: (timeMajorOutputs: Float32Array[]) => void,
): void {
  const { layout, units } = options;
  withFloat32OutputTensors(outputs, (staged) => {
    if (layout.timeMajor) return run(staged);
    const timeMajorOutputs = staged.map((o, i) =>
      i < units.length ? new Float32Array(o.length) : o
    );
    run(timeMajorOutputs);
    units.forEach((inner, i) =>
      transposeFirstTwoDims(timeMajorOutputs[i], [layout.maxTime, layout.batch, inner], staged[i])
    );
  });
}

/**
 * Checks the number of outputs of a sequence operation at preparation: `sequences` (1, or 2
 * for unmerged bidirectional outputs), optionally followed by exactly `states` HAL 1.3 state
 * outputs. Returns whether the states are there.
 */
export function checkStateOutputs(
  count: number,
  options: { sequences: number; states: number; why: string },
): boolean {
  const { sequences, states, why } = options;
  check(
    count === sequences || count === sequences + states,
    `expected ${sequences} outputs, or ${sequences + states} with the final states, ${why}; ` +
      `got ${count}`,
  );
  return count === sequences + states;
}
