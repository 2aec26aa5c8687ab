/**
 * RNN onto UNIDIRECTIONAL_SEQUENCE_RNN (forward; reverse with X and Y reversed in time by a
 * GATHER) or BIDIRECTIONAL_SEQUENCE_RNN (bidirectional), in HAL 1.3's form whose extra
 * outputs are the final hidden states (Y_h). NNAPI's cell takes one bias (ONNX's Wb + Rb)
 * and one activation, fused: Tanh, Relu or Sigmoid, the same for both directions. Refused
 * as for LSTM (see lstm.ts): clip, sequence_lens, layout 1, unknown extents it would need.
 */
import type { Rule } from "../rule.ts";
import { Recurrence } from "./recurrent_common.ts";

/** NNAPI activation codes of the ONNX RNN activations it has (lowercase names). */
const ACTIVATIONS: Record<string, number> = { tanh: 4, relu: 1, sigmoid: 6 };

const rnn: Rule = {
  convert(node, ctx) {
    const rec = new Recurrence(node, ctx, { gates: 1, activations: ["Tanh"] });
    const names = new Set(rec.activations.map(([name]) => name.toLowerCase()));
    const [activation] = names;
    const code = ACTIVATIONS[activation];
    if (names.size > 1 || code === undefined) {
      throw new Error(
        `RNN activations ${[...names].join(", ")} are not supported ` +
          "(one of Tanh, Relu, Sigmoid, the same in both directions)",
      );
    }
    const h = rec.hidden;
    const initialH = rec.initialStates(5).map((s) => rec.stateOrZeros(s));
    const cell = (dir: number) => [
      rec.gateWeights(rec.W, dir, 0),
      rec.gateWeights(rec.R, dir, 0),
      rec.constant([h], rec.biasSum(dir, 0, h)),
      initialH[dir],
    ];
    const s = ctx.builder;
    const spec = rec.spec;
    rec.emitSequence({
      states: 1,
      unidirectional: (input, dir) =>
        ctx.emit("UNIDIRECTIONAL_SEQUENCE_RNN", [
          input,
          ...cell(dir),
          s.int32(code),
          s.int32(1), // time-major
        ], [spec, spec]),
      bidirectional: () =>
        ctx.emit("BIDIRECTIONAL_SEQUENCE_RNN", [
          ctx.operand(rec.x),
          ...cell(0),
          ...cell(1),
          // No auxiliary input or weights.
          ...[0, 1, 2].map(() => s.noValue(spec.type)),
          s.int32(code),
          s.bool(true), // time-major
          s.bool(false), // merge_outputs
        ], [spec, spec, spec, spec]),
    });
  },
};

export const RNN_RULES: Record<string, Rule> = { RNN: rnn };
