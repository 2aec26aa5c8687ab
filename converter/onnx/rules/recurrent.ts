/**
 * LSTM (forward, one direction) onto UNIDIRECTIONAL_SEQUENCE_LSTM. ONNX packs the gates of
 * W, R, B and P as (input, output, forget, cell) and splits biases into W and R parts; NNAPI
 * takes one tensor per gate and one bias (their sum). Y gets its direction axis by a
 * reshape, Y_h and Y_c are the final states (HAL 1.3's extra outputs). Reverse and
 * bidirectional LSTMs, other activations, clip, input_forget and runtime sequence_lens are
 * refused for now.
 */
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, NodeView } from "../context.ts";
import type { Rule } from "../rule.ts";
import type { HostTensor } from "../tensors.ts";
import { floatConstant, requireFloat, sameTypeAs } from "./common.ts";

/** NNAPI's activation code for tanh. */
const TANH = 4;
/** ONNX gate order in W, R, B and P. */
const ONNX_GATES = { input: 0, output: 1, forget: 2, cell: 3 } as const;
/** ONNX peephole order: input, output, forget. */
const ONNX_PEEPHOLES = { input: 0, output: 1, forget: 2 } as const;

/** Rows [gate * h, (gate + 1) * h) of a [4h, n] matrix (direction 0). */
function gateRows(t: HostTensor, gate: number, h: number): Float64Array {
  const n = t.dims[t.dims.length - 1];
  return Float64Array.from(t.data.subarray(gate * h * n, (gate + 1) * h * n));
}

function checkAttributes(node: NodeView): void {
  const direction = node.string("direction", "forward");
  if (direction !== "forward") throw new Error(`direction '${direction}' is not supported yet`);
  const activations = node.has("activations")
    ? node.strings("activations")
    : ["Sigmoid", "Tanh", "Tanh"];
  if (activations.join() !== "Sigmoid,Tanh,Tanh") {
    throw new Error(
      `activations ${activations.join(", ")} are not supported (only Sigmoid, Tanh, Tanh)`,
    );
  }
  if (node.has("clip")) throw new Error("clip is not supported");
  if (node.int("input_forget", 0) !== 0) throw new Error("input_forget is not supported");
}

/** The initial state [1, batch, h] as NNAPI's [batch, h]: a reshape, or zeros. */
function initialState(
  ctx: ConversionContext,
  name: string | undefined,
  x: string,
  batch: number,
  h: number,
): BuiltOperand {
  const spec = sameTypeAs(ctx, x);
  if (!name) {
    if (batch === 0) {
      throw new Error("a batch known only at execution needs initial_h and initial_c");
    }
    return floatConstant(ctx, spec, [batch, h], new Float64Array(batch * h));
  }
  const shape = ctx.builder.constant("TENSOR_INT32", [2], new Int32Array([-1, h]));
  return ctx.emit("RESHAPE", [ctx.operand(name), shape], [spec])[0];
}

const lstm: Rule = {
  convert(node, ctx) {
    checkAttributes(node);
    const [x, w, r, b, sequenceLens, initialH, initialC, p] = node.inputs;
    requireFloat(ctx, x);
    if (sequenceLens) throw new Error("sequence_lens is not supported");
    const h = node.int("hidden_size");
    const W = ctx.requireConstant(w, "LSTM's W");
    const R = ctx.requireConstant(r, "LSTM's R");
    const B = b ? ctx.requireConstant(b, "LSTM's B") : undefined;
    const P = p ? ctx.requireConstant(p, "LSTM's P") : undefined;
    const inputSize = W.dims[2];
    // onnxruntime, the oracle, has no batch-major LSTM: refused until it can be checked.
    if (node.int("layout", 0) !== 0) throw new Error("layout 1 (batch-major) is not supported");
    const dims = ctx.dims(x);
    const batch = dims[1];
    const spec = sameTypeAs(ctx, x);
    const constant = (shape: number[], values: Float64Array) =>
      floatConstant(ctx, spec, shape, values);
    const inputWeights = (gate: number) => constant([h, inputSize], gateRows(W, gate, h));
    const recurrentWeights = (gate: number) => constant([h, h], gateRows(R, gate, h));
    const bias = (gate: number) => {
      const sum = new Float64Array(h);
      if (B) {
        for (let i = 0; i < h; i++) sum[i] = B.data[gate * h + i] + B.data[(4 + gate) * h + i];
      }
      return constant([h], sum);
    };
    const peephole = (k: number) =>
      P
        ? constant([h], Float64Array.from(P.data.subarray(k * h, (k + 1) * h)))
        : ctx.builder.noValue("TENSOR_FLOAT32");
    const s = ctx.builder;
    const g = ONNX_GATES;
    // HAL 1.3's form with the final output and cell states as outputs 1 and 2.
    const [sequence, finalH, finalC] = ctx.emit("UNIDIRECTIONAL_SEQUENCE_LSTM", [
      ctx.operand(x),
      inputWeights(g.input),
      inputWeights(g.forget),
      inputWeights(g.cell),
      inputWeights(g.output),
      recurrentWeights(g.input),
      recurrentWeights(g.forget),
      recurrentWeights(g.cell),
      recurrentWeights(g.output),
      peephole(ONNX_PEEPHOLES.input),
      peephole(ONNX_PEEPHOLES.forget),
      peephole(ONNX_PEEPHOLES.output),
      bias(g.input),
      bias(g.forget),
      bias(g.cell),
      bias(g.output),
      s.noValue("TENSOR_FLOAT32"),
      s.noValue("TENSOR_FLOAT32"),
      initialState(ctx, initialH, x, batch, h),
      initialState(ctx, initialC, x, batch, h),
      s.int32(TANH),
      s.float32(0),
      s.float32(0),
      s.bool(true), // time-major
      // No layer normalization.
      ...[0, 1, 2, 3].map(() => s.noValue("TENSOR_FLOAT32")),
    ], [spec, spec, spec]);
    // Y: [seq, 1, batch, h].
    if (node.outputs[0] && ctx.uses(node.outputs[0]) > 0) {
      const axis = ctx.builder.int32(1);
      ctx.emitAs(node.outputs[0], "EXPAND_DIMS", [sequence, axis], spec);
    }
    // Y_h and Y_c: the final states with the direction axis, [1, batch, h].
    const withDirection = (name: string, state: BuiltOperand) => {
      if (name && ctx.uses(name) > 0) ctx.emitAs(name, "EXPAND_DIMS", [state, s.int32(0)], spec);
    };
    withDirection(node.outputs[1], finalH);
    withDirection(node.outputs[2], finalC);
  },
};

/** NNAPI activation codes of the ONNX RNN activations it has. */
const RNN_ACTIVATIONS: Record<string, number> = { Tanh: TANH, Relu: 1, Sigmoid: 6 };

/** RNN (forward, sequence-major) onto UNIDIRECTIONAL_SEQUENCE_RNN (HAL 1.3's state output). */
const rnn: Rule = {
  convert(node, ctx) {
    const [x, w, r, b, sequenceLens, initialH] = node.inputs;
    requireFloat(ctx, x);
    const direction = node.string("direction", "forward");
    if (direction !== "forward") throw new Error(`direction '${direction}' is not supported yet`);
    if (node.int("layout", 0) !== 0) throw new Error("layout 1 (batch-major) is not supported");
    if (node.has("clip")) throw new Error("clip is not supported");
    if (sequenceLens) throw new Error("sequence_lens is not supported");
    const [activation] = node.has("activations") ? node.strings("activations") : ["Tanh"];
    const code = RNN_ACTIVATIONS[activation];
    if (code === undefined) throw new Error(`activation ${activation} is not supported`);
    const h = node.int("hidden_size");
    const W = ctx.requireConstant(w, "RNN's W");
    const R = ctx.requireConstant(r, "RNN's R");
    const B = b ? ctx.requireConstant(b, "RNN's B") : undefined;
    const spec = sameTypeAs(ctx, x);
    const bias = new Float64Array(h);
    if (B) { for (let i = 0; i < h; i++) bias[i] = B.data[i] + B.data[h + i]; }
    const s = ctx.builder;
    const [sequence, finalH] = ctx.emit("UNIDIRECTIONAL_SEQUENCE_RNN", [
      ctx.operand(x),
      floatConstant(ctx, spec, [h, W.dims[2]], gateRows(W, 0, h)),
      floatConstant(ctx, spec, [h, h], gateRows(R, 0, h)),
      floatConstant(ctx, spec, [h], bias),
      initialState(ctx, initialH, x, ctx.dims(x)[1], h),
      s.int32(code),
      s.int32(1),
    ], [spec, spec]);
    if (node.outputs[0] && ctx.uses(node.outputs[0]) > 0) {
      ctx.emitAs(node.outputs[0], "EXPAND_DIMS", [sequence, s.int32(1)], spec);
    }
    if (node.outputs[1] && ctx.uses(node.outputs[1]) > 0) {
      ctx.emitAs(node.outputs[1], "EXPAND_DIMS", [finalH, s.int32(0)], spec);
    }
  },
};

export const RECURRENT_RULES: Record<string, Rule> = { LSTM: lstm, RNN: rnn };
