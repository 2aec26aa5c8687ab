/**
 * BIDIRECTIONAL_SEQUENCE_RNN: a forward and a backward basic RNN cell run over the same
 * sequence. Inputs: input [maxTime, batch, inputSize] (time-major) or batch-major, the
 * forward cell's weights, recurrent_weights, bias and hidden_state, the backward cell's, an
 * optional auxiliary input with optional forward and backward auxiliary weights,
 * activation, time_major and merge_outputs (BOOL). The auxiliary operands select a linking
 * mode: none of them (no linking); all three ("cross linking": the auxiliary input, times
 * its weights, feeds both cells); or, since HAL 1.3, the auxiliary input without weights
 * ("parallel linking": it replaces the backward cell's input, so the backward weights are
 * [bwNumUnits, auxInputSize]). Outputs: the forward and backward outputs, or one output
 * holding both side by side when merge_outputs is set, optionally followed (HAL 1.3) by the
 * forward and backward hidden states after their last steps. Forms: TENSOR_FLOAT32 and
 * TENSOR_FLOAT16 (V1_2); with the state outputs, or declared in parallel linking (an
 * auxiliary input that is not omitted, auxiliary weights that are), V1_3. Checks follow
 * Android `BidirectionalSequenceRNN.cpp`.
 */
import { rnnSequence } from "../kernels/recurrent_sequence.ts";
import { elementCount } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import {
  activationOf,
  checkInputRanks,
  checkKnownActivation,
  checkRnnCell,
  checkStateOutputs,
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
  OperationError,
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

/** How the auxiliary input feeds the cells (NNAPI's linking modes). */
type LinkingMode = "none" | "cross" | "parallel";

/** The linking mode the present auxiliary operands select; faults for other combinations. */
function linkingMode(
  present: { auxInput: boolean; fwWeights: boolean; bwWeights: boolean },
): LinkingMode {
  const { auxInput, fwWeights, bwWeights } = present;
  if (!auxInput && !fwWeights && !bwWeights) return "none";
  if (auxInput && fwWeights && bwWeights) return "cross";
  if (auxInput && !fwWeights && !bwWeights) return "parallel";
  throw new OperationError(
    "aux_input (input 9), fw_aux_weights (input 10) and bw_aux_weights (input 11) must be all " +
      "present (cross linking), all omitted, or only aux_input present (parallel linking); " +
      `got only ${fwWeights ? "fw_aux_weights" : "bw_aux_weights"}` +
      `${auxInput ? " and aux_input" : ""} of them`,
  );
}

function dims(inputs: readonly PrepareInput[], index: number, rank: number): readonly number[] {
  return rankedShape(inputs, index, { name: NAMES[index], rank });
}

/** The BIDIRECTIONAL_SEQUENCE_RNN operation. */
export const bidirectionalSequenceRnn: OperationDefinition<"BIDIRECTIONAL_SEQUENCE_RNN"> = {
  type: "BIDIRECTIONAL_SEQUENCE_RNN",
  optionalInputs: AUX,

  validate(signature) {
    checkArity(signature, [15], [1, 2, 3, 4]);
    const t = recurrentTensorType(signature);
    checkTypes(
      signature,
      [...Array<OperandType>(12).fill(t), "INT32", "BOOL", "BOOL"],
      Array<OperandType>(signature.outputs.length).fill(t),
    );
    checkInputRanks(signature, NAMES, RANKS);
    const stateOutputs = signature.outputs.length >= 3;
    const omitted = (i: number) => signature.inputs[i].lifetime === "NO_VALUE";
    const parallel = !omitted(IN.auxInput) && omitted(IN.fwAuxWeights) &&
      omitted(IN.bwAuxWeights);
    return stateOutputs || parallel ? "V1_3" : "V1_2";
  },

  prepare(inputs, outputs) {
    checkKnownActivation(inputs, IN.activation);
    const timeMajor = scalarValue(inputs[IN.timeMajor], "time_major (input 13)") !== 0;
    const merge = scalarValue(inputs[IN.mergeOutputs], "merge_outputs (input 14)") !== 0;
    const withStates = checkStateOutputs(outputs.length, {
      sequences: merge ? 1 : 2,
      states: 2,
      why: `with merge_outputs ${merge} (the last two are the final forward and backward ` +
        "hidden states)",
    });
    const input = dims(inputs, IN.input, 3);
    const layout = sequenceLayout(input, timeMajor);
    const mode = linkingMode({
      auxInput: isPresent(inputs[IN.auxInput]),
      fwWeights: isPresent(inputs[IN.fwAuxWeights]),
      bwWeights: isPresent(inputs[IN.bwAuxWeights]),
    });
    let bwInputSize = input[2];
    if (mode !== "none") {
      const aux = dims(inputs, IN.auxInput, 3);
      check(
        aux[0] === input[0] && aux[1] === input[1],
        `aux_input (input 9) is [${aux.join(",")}], expected [${input[0]},${input[1]},*]`,
      );
      if (mode === "parallel") bwInputSize = aux[2];
    }
    const cell = { names: NAMES, batch: layout.batch, inputSize: input[2] };
    const fwUnits = checkRnnCell(inputs, IN.fwWeights, cell);
    const bwUnits = checkRnnCell(inputs, IN.bwWeights, { ...cell, inputSize: bwInputSize });
    if (mode === "cross") {
      const aux = dims(inputs, IN.auxInput, 3);
      const fwAux = dims(inputs, IN.fwAuxWeights, 2);
      const bwAux = dims(inputs, IN.bwAuxWeights, 2);
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
    const sequences = merge ? [shape(fwUnits + bwUnits)] : [shape(fwUnits), shape(bwUnits)];
    const states = [[layout.batch, fwUnits], [layout.batch, bwUnits]];
    return withStates ? [...sequences, ...states] : sequences;
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
    const fwAuxWeights = optionalFloat32Of(inputs[IN.fwAuxWeights]);
    const bwAuxWeights = optionalFloat32Of(inputs[IN.bwAuxWeights]);
    const mode = linkingMode({
      auxInput: auxInput !== null,
      fwWeights: fwAuxWeights !== null,
      bwWeights: bwAuxWeights !== null,
    });
    const fwUnits = inputs[IN.fwWeights].shape[0];
    const bwUnits = inputs[IN.bwWeights].shape[0];
    const stride = merge ? fwUnits + bwUnits : 0;
    const units = merge ? [stride] : [fwUnits, bwUnits];

    withTimeMajorOutputs(outputs, { layout, units }, (timeMajorOutputs) => {
      const fwOutput = timeMajorOutputs[0];
      const bwOutput = merge ? fwOutput : timeMajorOutputs[1];
      const [fwStateOut, bwStateOut] = timeMajorOutputs.slice(units.length);
      const cross = mode === "cross";
      const common = {
        activation,
        maxTime,
        batch,
        auxInput: cross ? auxInput : null,
        auxInputSize: cross ? auxInputSize : 0,
      };
      // Parallel linking: the auxiliary input is the backward cell's own input.
      const bwInput = mode === "parallel" && auxInput !== null
        ? { input: auxInput, inputSize: auxInputSize }
        : { input, inputSize };
      rnnSequence({
        ...common,
        input,
        inputSize,
        weights: float32Of(inputs[IN.fwWeights]),
        auxWeights: cross ? fwAuxWeights : null,
        recurrentWeights: float32Of(inputs[IN.fwRecurrentWeights]),
        bias: float32Of(inputs[IN.fwBias]),
        hiddenStateIn: float32Of(inputs[IN.fwHiddenState]),
        numUnits: fwUnits,
        reverse: false,
        output: fwOutput,
        outputStride: merge ? stride : fwUnits,
        outputOffset: 0,
        hiddenStateOut: fwStateOut,
      });
      rnnSequence({
        ...common,
        ...bwInput,
        weights: float32Of(inputs[IN.bwWeights]),
        auxWeights: cross ? bwAuxWeights : null,
        recurrentWeights: float32Of(inputs[IN.bwRecurrentWeights]),
        bias: float32Of(inputs[IN.bwBias]),
        hiddenStateIn: float32Of(inputs[IN.bwHiddenState]),
        numUnits: bwUnits,
        reverse: true,
        output: bwOutput,
        outputStride: merge ? stride : bwUnits,
        outputOffset: merge ? fwUnits : 0,
        hiddenStateOut: bwStateOut,
      });
    });
  },
};
