/**
 * GRU, which NNAPI lacks, unrolled over the time steps known at conversion: X is split
 * into steps, and each step of each direction projects its input (FULLY_CONNECTED, z and r
 * together, then the candidate h~) and its state (FULLY_CONNECTED), applies LOGISTIC or
 * TANH, and blends: h = h~ + z * (h_prev - h~), which is ONNX's (1 - z) * h~ + z * h_prev.
 * With linear_before_reset 0 the reset gate scales the state before its projection (Rbh
 * joins the input bias); with 1 it scales the projection (Rbh included). An omitted initial_h is zeros: the first step then has no recurrent terms,
 * so the batch may be known only at execution. Refused: other activations, clip,
 * sequence_lens, and a sequence length known only at execution.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext } from "../context.ts";
import type { Rule } from "../rule.ts";
import { Recurrence } from "./recurrent_common.ts";

const DEFAULT_ACTIVATIONS = ["Sigmoid", "Tanh"];

/** What one direction's unrolling needs besides the node. */
interface Direction {
  dir: number;
  seq: number;
  linearBeforeReset: boolean;
  /** The initial state [batch, h]; undefined for zeros. */
  initial: BuiltOperand | undefined;
}

/** Emits operations on X's type (no fused activations). */
function emitter(ctx: ConversionContext, rec: Recurrence) {
  const none = ctx.builder.int32(FUSED_NONE);
  return {
    one: (type: "LOGISTIC" | "TANH", a: BuiltOperand) => ctx.emit(type, [a], [rec.spec])[0],
    two: (type: "ADD" | "SUB" | "MUL", a: BuiltOperand, b: BuiltOperand) =>
      ctx.emit(type, [a, b, none], [rec.spec])[0],
    /** FULLY_CONNECTED of `input` (flattened to rows) by `weights` [units, k] plus `bias`. */
    project: (input: BuiltOperand, weights: BuiltOperand, bias: BuiltOperand) =>
      ctx.emit("FULLY_CONNECTED", [input, weights, bias, none], [rec.spec])[0],
    /** `n` equal parts of `a` along `axis`. */
    split: (a: BuiltOperand, axis: number, n: number) =>
      n === 1 ? [a] : ctx.emit(
        "SPLIT",
        [a, ctx.builder.int32(axis), ctx.builder.int32(n)],
        Array(n).fill(rec.spec),
      ),
  };
}

/** The states after each step of one direction, in time order; `xs` holds X's steps. */
function unroll(
  rec: Recurrence,
  xs: readonly BuiltOperand[],
  direction: Direction,
): BuiltOperand[] {
  const { dir, seq, linearBeforeReset } = direction;
  const h = rec.hidden;
  const e = emitter(rec.ctx, rec);
  const matrix = (t: typeof rec.W, first: number, count: number) =>
    rec.constant([count, t.dims[2]], rec.rows(t, dir, first, count));
  const vector = (values: Float64Array) => rec.constant([values.length], values);
  const Wzr = matrix(rec.W, 0, 2 * h);
  const Wh = matrix(rec.W, 2 * h, h);
  const Rzr = matrix(rec.R, 0, 2 * h);
  const Rh = matrix(rec.R, 2 * h, h);
  const zrBias = vector(rec.biasSum(dir, 0, 2 * h));
  // Wbh, and Rbh too unless the reset gate scales Rh * h + Rbh.
  const candidateBias = vector(
    linearBeforeReset ? rec.rows(rec.B, dir, 2 * h, h) : rec.biasSum(dir, 2 * h, h),
  );
  const Rbh = vector(linearBeforeReset ? rec.rows(rec.B, dir, 5 * h, h) : new Float64Array(h));
  const noBias = vector(new Float64Array(2 * h));
  const steps: BuiltOperand[] = Array(seq);
  let state = direction.initial;
  for (let i = 0; i < seq; i++) {
    const t = rec.reversed[dir] ? seq - 1 - i : i;
    // X's step [1, batch, input] is flattened to [batch, input] by FULLY_CONNECTED.
    const xzr = e.project(xs[t], Wzr, zrBias);
    const zrIn = state ? e.two("ADD", xzr, e.project(state, Rzr, noBias)) : xzr;
    const [z, r] = e.split(e.one("LOGISTIC", zrIn), 1, 2);
    let candidateIn = e.project(xs[t], Wh, candidateBias);
    if (linearBeforeReset) {
      // With a zero state, Rh * h + Rbh is Rbh (nothing without B).
      const recurrent = state ? e.project(state, Rh, Rbh) : rec.B ? Rbh : undefined;
      if (recurrent) candidateIn = e.two("ADD", candidateIn, e.two("MUL", r, recurrent));
    } else if (state) {
      candidateIn = e.two("ADD", candidateIn, e.project(e.two("MUL", r, state), Rh, Rbh));
    }
    const candidate = e.one("TANH", candidateIn);
    state = state
      ? e.two("ADD", candidate, e.two("MUL", z, e.two("SUB", state, candidate)))
      : e.two("SUB", candidate, e.two("MUL", z, candidate));
    steps[t] = state;
  }
  return steps;
}

const gru: Rule = {
  convert(node, ctx) {
    const rec = new Recurrence(node, ctx, { gates: 3, activations: DEFAULT_ACTIVATIONS });
    rec.requireActivations(DEFAULT_ACTIVATIONS);
    const seq = rec.sequenceLength("(unrolled over its time steps)");
    const linearBeforeReset = node.int("linear_before_reset", 0) !== 0;
    const e = emitter(ctx, rec);
    const initial = rec.initialStates(5);
    const xs = e.split(ctx.operand(rec.x), 0, seq);
    const steps = rec.reversed.map((_, dir) =>
      unroll(rec, xs, { dir, seq, linearBeforeReset, initial: initial[dir] })
    );
    if (rec.wants(0)) {
      // Y [seq, dirs, batch, h]: every step's states in (time, direction) order, reshaped.
      const all = Array.from({ length: seq }, (_, t) => steps.map((d) => d[t])).flat();
      const joined = all.length === 1
        ? all[0]
        : ctx.emit("CONCATENATION", [...all, ctx.builder.int32(0)], [rec.spec])[0];
      const shape = new Int32Array([seq, steps.length, -1, rec.hidden]);
      const target = ctx.builder.constant("TENSOR_INT32", [4], shape);
      ctx.emitAs(node.outputs[0], "RESHAPE", [joined, target], rec.spec);
    }
    // Y_h: each direction's state after its last step.
    rec.stackDirections(1, steps.map((d, dir) => d[rec.reversed[dir] ? 0 : seq - 1]), 0);
  },
};

export const GRU_RULES: Record<string, Rule> = { GRU: gru };
