/**
 * LSTM onto UNIDIRECTIONAL_SEQUENCE_LSTM (forward; reverse with X and Y reversed in time by
 * a GATHER) or BIDIRECTIONAL_SEQUENCE_LSTM (bidirectional: its backward cell runs from the
 * last step to the first and writes each step's output at that step, as ONNX's Y does).
 * Both in HAL 1.3's form, whose extra outputs are the final output and cell states (Y_h,
 * Y_c). ONNX packs the gates of W, R and B as (input, output, forget, cell), P as (input,
 * output, forget), and splits biases into W and R parts; NNAPI takes one tensor per gate and
 * one bias (their sum).
 * Refused: other activations, clip, input_forget, sequence_lens, layout 1, 'reverse' with a
 * sequence length known only at execution, and a batch known only at execution without
 * initial states (NNAPI's cells take no omitted state).
 */
import type { BuiltOperand } from "../../graph_builder.ts";
import type { Rule } from "../rule.ts";
import { Recurrence } from "./recurrent_common.ts";

/** NNAPI's activation code for tanh. */
const TANH = 4;
/** ONNX gate order in W, R and B. */
const ONNX_GATES = { input: 0, output: 1, forget: 2, cell: 3 } as const;
/** NNAPI's gate order: input, forget, cell, output. */
const NNAPI_GATES = [ONNX_GATES.input, ONNX_GATES.forget, ONNX_GATES.cell, ONNX_GATES.output];
/** ONNX's peephole order (input, output, forget) in NNAPI's (input, forget, output). */
const NNAPI_PEEPHOLES = [0, 2, 1];
const DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh", "Tanh"];

/**
 * The 17 operands of one direction's cell, in NNAPI's order: input and recurrent weights,
 * peepholes, biases, and no projection.
 */
function cellOperands(rec: Recurrence, dir: number): BuiltOperand[] {
  const h = rec.hidden;
  const p = rec.node.input(7);
  const P = p ? rec.ctx.requireConstant(p, "LSTM's P") : undefined;
  const none = () => rec.ctx.builder.noValue(rec.spec.type);
  return [
    ...NNAPI_GATES.map((g) => rec.gateWeights(rec.W, dir, g)),
    ...NNAPI_GATES.map((g) => rec.gateWeights(rec.R, dir, g)),
    ...NNAPI_PEEPHOLES.map((k) => P ? rec.constant([h], rec.rows(P, dir, k * h, h)) : none()),
    ...NNAPI_GATES.map((g) => rec.constant([h], rec.biasSum(dir, g * h, h))),
    none(),
    none(),
  ];
}

/** activation, cell_clip and proj_clip: tanh, no clipping (clips in X's float type). */
function cellParameters(rec: Recurrence): BuiltOperand[] {
  const s = rec.ctx.builder;
  const noClip = () =>
    rec.spec.type === "TENSOR_FLOAT16"
      ? s.constant("FLOAT16", [], new Float16Array([0]))
      : s.float32(0);
  return [s.int32(TANH), noClip(), noClip()];
}

/** `count` omitted optional operands (layer normalization, auxiliary input and weights). */
function omitted(rec: Recurrence, count: number): BuiltOperand[] {
  return Array.from({ length: count }, () => rec.ctx.builder.noValue(rec.spec.type));
}

const lstm: Rule = {
  convert(node, ctx) {
    const rec = new Recurrence(node, ctx, { gates: 4, activations: DEFAULT_ACTIVATIONS });
    rec.requireActivations(DEFAULT_ACTIVATIONS);
    if (node.int("input_forget", 0) !== 0) throw new Error("LSTM input_forget is not supported");
    const initialH = rec.initialStates(5).map((s) => rec.stateOrZeros(s));
    const initialC = rec.initialStates(6).map((s) => rec.stateOrZeros(s));
    const s = ctx.builder;
    const spec = rec.spec;
    rec.emitSequence({
      states: 2,
      unidirectional: (input, dir) =>
        ctx.emit("UNIDIRECTIONAL_SEQUENCE_LSTM", [
          input,
          ...cellOperands(rec, dir),
          initialH[dir],
          initialC[dir],
          ...cellParameters(rec),
          s.bool(true), // time-major
          ...omitted(rec, 4), // layer normalization
        ], [spec, spec, spec]),
      bidirectional: () =>
        ctx.emit("BIDIRECTIONAL_SEQUENCE_LSTM", [
          ctx.operand(rec.x),
          ...cellOperands(rec, 0),
          ...cellOperands(rec, 1),
          initialH[0],
          initialC[0],
          initialH[1],
          initialC[1],
          ...omitted(rec, 9), // auxiliary input and weights
          ...cellParameters(rec),
          s.bool(false), // merge_outputs
          s.bool(true), // time-major
          ...omitted(rec, 8), // layer normalization
        ], Array(6).fill(spec)),
    });
  },
};

export const LSTM_RULES: Record<string, Rule> = { LSTM: lstm };
