/**
 * BIDIRECTIONAL_SEQUENCE_LSTM: a forward and a backward LSTM cell run over the same
 * sequence. Inputs: input [maxTime, batch, inputSize] (time-major) or batch-major; the
 * forward cell's weights, biases and projection (1-17), the backward cell's (18-34); the
 * forward and backward output and cell states (35-38); an optional auxiliary input (39)
 * with optional forward and backward auxiliary weights (40-47); activation, cell_clip,
 * proj_clip, merge_outputs and time_major (48-52); the optional layer-normalization
 * weights of both cells (53-60). With auxiliary weights the auxiliary input feeds both
 * cells ("cross linking"); without them (HAL 1.3) it replaces the backward cell's input
 * ("parallel linking"). Outputs: the forward and backward outputs, or one output holding both
 * side by side when merge_outputs is set, optionally followed (HAL 1.3) by the forward output
 * and cell states and the backward output and cell states after their last steps. Forms:
 * TENSOR_FLOAT32 and TENSOR_FLOAT16 (V1_2); with the state outputs, or declared in parallel
 * linking (an auxiliary input that is not omitted, auxiliary weights that are), V1_3. Checks
 * follow Android `BidirectionalSequenceLSTM.cpp`.
 */
import { type LstmAuxWeights, lstmSequence } from "../kernels/recurrent_sequence.ts";
import type { OperandType } from "../nnapi/types.ts";
import { elementCount, type Tensor } from "../nnapi/tensor.ts";
import { floatScalarType } from "./common/operand_types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  checkStateOutputs,
  float32Of,
  isPresent,
  optionalFloat32Of,
  rankedShape,
  recurrentTensorType,
  sequenceLayout,
  sequenceShape,
  toTimeMajor as timeMajorOf,
  withTimeMajorOutputs,
} from "./common/recurrent.ts";
import {
  CELL_NAMES,
  cellAt,
  cellSizesOf,
  cellStepMacs,
  checkKnownClips,
  checkLstmCell,
  lstmWeightsOf,
  optionalPositions,
  requiredRanks,
} from "./common/sequence_lstm.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

/** Input positions besides the cells'. */
const IN = {
  input: 0,
  auxInput: 39,
  activation: 48,
  cellClip: 49,
  projClip: 50,
  mergeOutputs: 51,
  timeMajor: 52,
} as const;

const FW = cellAt(1, 35, 53);
const BW = cellAt(18, 37, 57);
/** Auxiliary weights (input, forget, cell, output gates) of each cell. */
const FW_AUX = [40, 41, 42, 43];
const BW_AUX = [44, 45, 46, 47];

const GATES = ["input", "forget", "cell", "output"];
const NAMES = [
  "input",
  ...CELL_NAMES.map((n) => `fw_${n}`),
  ...CELL_NAMES.map((n) => `bw_${n}`),
  "fw_output_state_in",
  "fw_cell_state_in",
  "bw_output_state_in",
  "bw_cell_state_in",
  "aux_input",
  ...GATES.map((g) => `fw_aux_input_to_${g}_weights`),
  ...GATES.map((g) => `bw_aux_input_to_${g}_weights`),
  "activation",
  "cell_clip",
  "proj_clip",
  "merge_outputs",
  "time_major",
  ...GATES.map((g) => `fw_${g}_layer_norm_weights`),
  ...GATES.map((g) => `bw_${g}_layer_norm_weights`),
];

/** Checks a cell's auxiliary weights: all four (three under CIFG) or none; true if present. */
function checkAuxWeights(
  inputs: readonly PrepareInput[],
  aux: readonly number[],
  options: { useCifg: boolean; nCell: number; nAuxInput: number | undefined },
): boolean {
  const present = aux.map((i) => isPresent(inputs[i]));
  const what = (i: number) => `${NAMES[i]} (input ${i})`;
  if (options.useCifg) check(!present[0], `${what(aux[0])} must be omitted with CIFG`);
  const required = options.useCifg ? present.slice(1) : present;
  check(
    required.every((p) => p) || !present.some((p) => p),
    `auxiliary weights ${aux.map(what).join(", ")} must be all present or all omitted`,
  );
  if (!present[1]) return false;
  check(options.nAuxInput !== undefined, `${what(aux[1])} requires aux_input (input 39)`);
  for (const [k, index] of aux.entries()) {
    if (!present[k]) continue;
    const shape = inputs[index].shape;
    check(
      shape.length === 2 && shape[0] === options.nCell && shape[1] === options.nAuxInput,
      `${what(index)} has shape [${
        shape.join(",")
      }], expected [${options.nCell},${options.nAuxInput}]`,
    );
  }
  return true;
}

function auxWeightsOf(inputs: readonly Tensor[], aux: readonly number[]): LstmAuxWeights {
  return {
    inputToInput: optionalFloat32Of(inputs[aux[0]]),
    inputToForget: float32Of(inputs[aux[1]]),
    inputToCell: float32Of(inputs[aux[2]]),
    inputToOutput: float32Of(inputs[aux[3]]),
  };
}

/** The BIDIRECTIONAL_SEQUENCE_LSTM operation. */
export const bidirectionalSequenceLstm: OperationDefinition<"BIDIRECTIONAL_SEQUENCE_LSTM"> = {
  type: "BIDIRECTIONAL_SEQUENCE_LSTM",
  optionalInputs: [
    ...optionalPositions(FW),
    ...optionalPositions(BW),
    IN.auxInput,
    ...FW_AUX,
    ...BW_AUX,
  ],

  validate(signature) {
    checkArity(signature, [61], [1, 2, 5, 6]);
    const t = recurrentTensorType(signature);
    const scalarFloat = floatScalarType(t);
    const expected: OperandType[] = [
      ...Array<OperandType>(48).fill(t),
      "INT32",
      scalarFloat,
      scalarFloat,
      "BOOL",
      "BOOL",
      ...Array<OperandType>(8).fill(t),
    ];
    checkTypes(signature, expected, Array<OperandType>(signature.outputs.length).fill(t));
    checkInputRanks(signature, NAMES, [
      [IN.input, 3],
      ...requiredRanks(FW),
      ...requiredRanks(BW),
    ]);
    const stateOutputs = signature.outputs.length >= 5;
    const omitted = (i: number) => signature.inputs[i].lifetime === "NO_VALUE";
    const parallel = !omitted(IN.auxInput) && [...FW_AUX, ...BW_AUX].every(omitted);
    return stateOutputs || parallel ? "V1_3" : "V1_2";
  },

  prepare(inputs, outputs) {
    checkKnownActivation(inputs, IN.activation);
    checkKnownClips(inputs, [IN.cellClip, IN.projClip], NAMES);
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 52)") !== 0;
    const merge = scalarValue(inputs[IN.mergeOutputs], "merge_outputs (input 51)") !== 0;
    const withStates = checkStateOutputs(outputs.length, {
      sequences: merge ? 1 : 2,
      states: 4,
      why: `with merge_outputs ${merge} (the last four are the final forward output and ` +
        "cell states and backward output and cell states)",
    });
    const input = rankedShape(inputs, IN.input, { name: "input", rank: 3 });
    const layout = sequenceLayout(input, timeMajor);
    const nBatch = layout.batch;
    const fw = checkLstmCell(inputs, FW, { names: NAMES, nBatch, nInput: input[2] });

    let nAuxInput: number | undefined;
    if (isPresent(inputs[IN.auxInput])) {
      const aux = rankedShape(inputs, IN.auxInput, { name: "aux_input", rank: 3 });
      check(
        aux[0] === input[0] && aux[1] === input[1],
        `aux_input (input 39) is [${aux.join(",")}], expected [${input[0]},${input[1]},*]`,
      );
      nAuxInput = aux[2];
    }
    const hasFwAux = checkAuxWeights(inputs, FW_AUX, { ...fw, nAuxInput });
    const parallel = nAuxInput !== undefined && !hasFwAux;
    const bw = checkLstmCell(inputs, BW, {
      names: NAMES,
      nBatch,
      nInput: parallel ? nAuxInput! : input[2],
    });
    const hasBwAux = checkAuxWeights(inputs, BW_AUX, { ...bw, nAuxInput });
    check(
      hasFwAux === hasBwAux,
      "forward and backward auxiliary weights must be both present or both omitted",
    );
    const shape = (units: number) => sequenceShape(layout, units);
    const sequences = merge
      ? [shape(fw.nOutput + bw.nOutput)]
      : [shape(fw.nOutput), shape(bw.nOutput)];
    const states = [fw.nOutput, fw.nCell, bw.nOutput, bw.nCell].map((n) => [nBatch, n]);
    return withStates ? [...sequences, ...states] : sequences;
  },

  /** Every step runs both cells' weight products (and auxiliary ones) for each batch row. */
  cost(inputs, outputs) {
    const [d0, d1] = inputs[IN.input].shape;
    let macs = cellStepMacs(inputs, FW) + cellStepMacs(inputs, BW);
    for (const index of [...FW_AUX, ...BW_AUX]) {
      if (inputs[index].value !== null) macs += elementCount(inputs[index].shape);
    }
    return d0 * d1 * macs + outputs.reduce((n, o) => n + elementCount(o.shape), 0);
  },

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const merge = scalarOf(inputs[IN.mergeOutputs]) !== 0;
    const layout = sequenceLayout(inputs[IN.input].shape, scalarOf(inputs[IN.timeMajor]) !== 0);
    const { maxTime, batch: nBatch } = layout;
    const nInput = inputs[IN.input].shape[2];
    const toTimeMajor = (data: Float32Array, inner: number) => timeMajorOf(data, layout, inner);
    const input = toTimeMajor(float32Of(inputs[IN.input]), nInput);
    const auxRaw = optionalFloat32Of(inputs[IN.auxInput]);
    const nAuxInput = auxRaw === null ? 0 : inputs[IN.auxInput].shape[2];
    const auxInput = auxRaw === null ? null : toTimeMajor(auxRaw, nAuxInput);
    const cross = auxInput !== null && optionalFloat32Of(inputs[FW_AUX[1]]) !== null;
    const parallel = auxInput !== null && !cross;
    const fw = cellSizesOf(inputs, FW);
    const bw = cellSizesOf(inputs, BW);
    const common = {
      activation,
      cellClip: scalarOf(inputs[IN.cellClip]),
      projClip: scalarOf(inputs[IN.projClip]),
      nBatch,
    };

    const stride = fw.nOutput + bw.nOutput;
    const units = merge ? [stride] : [fw.nOutput, bw.nOutput];
    withTimeMajorOutputs(outputs, { layout, units }, (timeMajorOutputs) => {
      const [fwOutputState, fwCellState, bwOutputState, bwCellState] = timeMajorOutputs.slice(
        units.length,
      );
      lstmSequence({
        weights: lstmWeightsOf(inputs, FW),
        config: { ...common, ...fw, nInput },
        input,
        auxInput: cross ? auxInput : null,
        auxWeights: cross ? auxWeightsOf(inputs, FW_AUX) : null,
        nAuxInput,
        outputStateIn: float32Of(inputs[FW.outputStateIn]),
        cellStateIn: float32Of(inputs[FW.cellStateIn]),
        maxTime,
        reverse: false,
        output: timeMajorOutputs[0],
        outputStride: merge ? stride : fw.nOutput,
        outputOffset: 0,
        outputStateOut: fwOutputState,
        cellStateOut: fwCellState,
      });
      lstmSequence({
        weights: lstmWeightsOf(inputs, BW),
        config: { ...common, ...bw, nInput: parallel ? nAuxInput : nInput },
        input: parallel && auxInput !== null ? auxInput : input,
        auxInput: cross ? auxInput : null,
        auxWeights: cross ? auxWeightsOf(inputs, BW_AUX) : null,
        nAuxInput,
        outputStateIn: float32Of(inputs[BW.outputStateIn]),
        cellStateIn: float32Of(inputs[BW.cellStateIn]),
        maxTime,
        reverse: true,
        output: merge ? timeMajorOutputs[0] : timeMajorOutputs[1],
        outputStride: merge ? stride : bw.nOutput,
        outputOffset: merge ? fw.nOutput : 0,
        outputStateOut: bwOutputState,
        cellStateOut: bwCellState,
      });
    });
  },
};
