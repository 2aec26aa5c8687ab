/**
 * BIDIRECTIONAL_SEQUENCE_RNN (HAL 1.2): a forward and a backward basic RNN cell run over the
 * same sequence. Inputs: input [maxTime, batch, inputSize] (time-major) or batch-major,
 * the forward cell's weights, recurrent_weights, bias and hidden_state, the backward
 * cell's, an optional auxiliary input with forward and backward auxiliary weights (all
 * three present or all omitted), activation, time_major and merge_outputs (BOOL). Outputs:
 * the forward and backward outputs, or one output holding both side by side when
 * merge_outputs is set. Checks follow Android 10 `BidirectionalSequenceRNN.cpp`.
 */
import { rnnSequence } from "../../kernels/recurrent_sequence.ts";
import { elementCount } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  checkRnnCell,
  float32Of,
  isPresent,
  optionalFloat32Of,
  rankedShape,
  recurrentTensorType,
  sequenceLayout,
  sequenceShape,
  toTimeMajor,
  withTimeMajorOutputs,
} from "./common/recurrent.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const IN = {
  input: 0,
  fwWeights: 1,
  fwRecurrentWeights: 2,
  fwBias: 3,
  fwHiddenState: 4,
  bwWeights: 5,
  bwRecurrentWeights: 6,
  bwBias: 7,
  bwHiddenState: 8,
  auxInput: 9,
  fwAuxWeights: 10,
  bwAuxWeights: 11,
  activation: 12,
  timeMajor: 13,
  mergeOutputs: 14,
} as const;

const NAMES = [
  "input",
  "fw_weights",
  "fw_recurrent_weights",
  "fw_bias",
  "fw_hidden_state",
  "bw_weights",
  "bw_recurrent_weights",
  "bw_bias",
  "bw_hidden_state",
  "aux_input",
  "fw_aux_weights",
  "bw_aux_weights",
  "activation",
  "time_major",
  "merge_outputs",
];

const RANKS: readonly (readonly [number, number])[] = [
  [IN.input, 3],
  [IN.fwWeights, 2],
  [IN.fwRecurrentWeights, 2],
  [IN.fwBias, 1],
  [IN.fwHiddenState, 2],
  [IN.bwWeights, 2],
  [IN.bwRecurrentWeights, 2],
  [IN.bwBias, 1],
  [IN.bwHiddenState, 2],
];

const AUX = [IN.auxInput, IN.fwAuxWeights, IN.bwAuxWeights];

function dims(inputs: readonly PrepareInput[], index: number, rank: number): readonly number[] {
  return rankedShape(inputs, index, { name: NAMES[index], rank });
}

/** The BIDIRECTIONAL_SEQUENCE_RNN operation. */
export const bidirectionalSequenceRnn: OperationDefinition<"BIDIRECTIONAL_SEQUENCE_RNN"> = {
  type: "BIDIRECTIONAL_SEQUENCE_RNN",
  optionalInputs: AUX,

  validate(signature) {
    checkArity(signature, [15], [1, 2]);
    const t = recurrentTensorType(signature);
    checkTypes(
      signature,
      [...Array<OperandType>(12).fill(t), "INT32", "BOOL", "BOOL"],
      Array<OperandType>(signature.outputs.length).fill(t),
    );
    checkInputRanks(signature, NAMES, RANKS);
    return "V1_2";
  },

  prepare(inputs, outputs) {
    checkKnownActivation(inputs, IN.activation);
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 13)") !== 0;
    const merge = scalarValue(inputs[IN.mergeOutputs], "merge_outputs (input 14)") !== 0;
    check(
      outputs.length === (merge ? 1 : 2),
      `expected ${merge ? 1 : 2} outputs with merge_outputs ${merge}, got ${outputs.length}`,
    );
    const input = dims(inputs, IN.input, 3);
    const layout = sequenceLayout(input, timeMajor);
    const cell = { names: NAMES, batch: layout.batch, inputSize: input[2] };
    const fwUnits = checkRnnCell(inputs, IN.fwWeights, cell);
    const bwUnits = checkRnnCell(inputs, IN.bwWeights, cell);

    const present = AUX.map((i) => isPresent(inputs[i]));
    check(
      present.every((p) => p) || present.every((p) => !p),
      "aux_input, fw_aux_weights and bw_aux_weights must be all present or all omitted",
    );
    if (present[0]) {
      const aux = dims(inputs, IN.auxInput, 3);
      const fwAux = dims(inputs, IN.fwAuxWeights, 2);
      const bwAux = dims(inputs, IN.bwAuxWeights, 2);
      check(
        aux[0] === input[0] && aux[1] === input[1],
        `aux_input (input 9) is [${aux.join(",")}], expected [${input[0]},${input[1]},*]`,
      );
      check(
        fwAux[0] === fwUnits && fwAux[1] === aux[2],
        `fw_aux_weights (input 10) are [${fwAux.join(",")}], expected [${fwUnits},${aux[2]}]`,
      );
      check(
        bwAux[0] === bwUnits && bwAux[1] === aux[2],
        `bw_aux_weights (input 11) are [${bwAux.join(",")}], expected [${bwUnits},${aux[2]}]`,
      );
    }
    const shape = (units: number) => sequenceShape(layout, units);
    return merge ? [shape(fwUnits + bwUnits)] : [shape(fwUnits), shape(bwUnits)];
  },

  /** Every step multiplies each batch row by both cells' weights. */
  cost(inputs, outputs) {
    const [d0, d1] = inputs[IN.input].shape;
    let macs = 0;
    for (
      const i of [
        IN.fwWeights,
        IN.fwRecurrentWeights,
        IN.bwWeights,
        IN.bwRecurrentWeights,
        IN.fwAuxWeights,
        IN.bwAuxWeights,
      ]
    ) if (inputs[i].value !== null) macs += elementCount(inputs[i].shape);
    return d0 * d1 * macs + outputs.reduce((n, o) => n + elementCount(o.shape), 0);
  },

  execute(inputs, outputs) {
    const activation = activationOf(inputs, IN.activation);
    const merge = scalarOf(inputs[IN.mergeOutputs]) !== 0;
    const layout = sequenceLayout(inputs[IN.input].shape, scalarOf(inputs[IN.timeMajor]) !== 0);
    const { maxTime, batch } = layout;
    const inputSize = inputs[IN.input].shape[2];
    const input = toTimeMajor(float32Of(inputs[IN.input]), layout, inputSize);
    const auxRaw = optionalFloat32Of(inputs[IN.auxInput]);
    const auxInputSize = auxRaw === null ? 0 : inputs[IN.auxInput].shape[2];
    const auxInput = auxRaw === null ? null : toTimeMajor(auxRaw, layout, auxInputSize);
    const fwUnits = inputs[IN.fwWeights].shape[0];
    const bwUnits = inputs[IN.bwWeights].shape[0];
    const stride = merge ? fwUnits + bwUnits : 0;
    const units = merge ? [stride] : [fwUnits, bwUnits];

    withTimeMajorOutputs(outputs, { layout, units }, (timeMajorOutputs) => {
      const fwOutput = timeMajorOutputs[0];
      const bwOutput = merge ? fwOutput : timeMajorOutputs[1];
      const common = { input, auxInput, activation, maxTime, batch, inputSize, auxInputSize };
      rnnSequence({
        ...common,
        weights: float32Of(inputs[IN.fwWeights]),
        auxWeights: optionalFloat32Of(inputs[IN.fwAuxWeights]),
        recurrentWeights: float32Of(inputs[IN.fwRecurrentWeights]),
        bias: float32Of(inputs[IN.fwBias]),
        hiddenStateIn: float32Of(inputs[IN.fwHiddenState]),
        numUnits: fwUnits,
        reverse: false,
        output: fwOutput,
        outputStride: merge ? stride : fwUnits,
        outputOffset: 0,
      });
      rnnSequence({
        ...common,
        weights: float32Of(inputs[IN.bwWeights]),
        auxWeights: optionalFloat32Of(inputs[IN.bwAuxWeights]),
        recurrentWeights: float32Of(inputs[IN.bwRecurrentWeights]),
        bias: float32Of(inputs[IN.bwBias]),
        hiddenStateIn: float32Of(inputs[IN.bwHiddenState]),
        numUnits: bwUnits,
        reverse: true,
        output: bwOutput,
        outputStride: merge ? stride : bwUnits,
        outputOffset: merge ? fwUnits : 0,
      });
    });
  },
};
