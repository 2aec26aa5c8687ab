/**
 * What the LSTM, RNN and GRU rules share: the inputs and attributes they all read or refuse
 * (direction, activations, layout, clip, sequence_lens), the per-direction pieces of ONNX's
 * weights stacked by direction and gate, initial states, the time reversal, and the outputs
 * with their direction axis (Y [seq, dirs, batch, h], final states [dirs, batch, h]).
 */
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import { type HostTensor, hostValues } from "../tensors.ts";
import { filled, floatConstant, requireFloat, sameTypeAs, specOf } from "./common.ts";
import { extentOperand, runtimeShape } from "../runtime_extents.ts";

/** Per ONNX direction, whether each direction runs from the last step to the first. */
const DIRECTIONS: Record<string, boolean[]> = {
  forward: [false],
  reverse: [true],
  bidirectional: [false, true],
};

/** The NNAPI sequence operation(s) of an LSTM or RNN, by number of directions. */
export interface SequenceOperations {
  /** Final states per direction (LSTM: h and c; RNN: h). */
  states: number;
  /** One direction over `input` (time-major): [Y, ...final states]. */
  unidirectional(input: BuiltOperand, dir: number): BuiltOperand[];
  /** Both directions: [Y forward, Y backward, ...forward states, ...backward states]. */
  bidirectional(): BuiltOperand[];
}

/** One ONNX recurrent node (LSTM, RNN, GRU) read and checked, with its conversion helpers. */
export class Recurrence {
  /** The sequence input X ([seq, batch, input]). */
  readonly x: string;
  readonly spec: OutputSpec;
  readonly hidden: number;
  readonly inputSize: number;
  /** Per direction, whether it runs from the last step to the first. */
  readonly reversed: readonly boolean[];
  /** Per direction, its activation names (ONNX defaults filled in). */
  readonly activations: readonly string[][];
  readonly W: HostTensor;
  readonly R: HostTensor;
  readonly B: HostTensor | undefined;
  readonly #gates: number;

  /**
   * Reads inputs X, W, R, B and sequence_lens and the shared attributes; refuses layout 1,
   * clip, sequence_lens and weights not known at conversion. `gates` is the number of gates
   * stacked in W, `activations` the defaults of one direction.
   */
  constructor(
    readonly node: NodeView,
    readonly ctx: ConversionContext,
    options: { gates: number; activations: string[] },
  ) {
    const [x, w, r, b, sequenceLens] = node.inputs;
    const op = node.opType;
    requireFloat(ctx, x);
    const direction = node.string("direction", "forward");
    const reversed = DIRECTIONS[direction];
    if (!reversed) throw new Error(`${op} direction '${direction}' is not an ONNX direction`);
    // onnxruntime, the oracle, has no batch-major recurrences: refused until it can be checked.
    if (node.int("layout", 0) !== 0) throw new Error("layout 1 (batch-major) is not supported");
    if (node.has("clip")) throw new Error(`${op} clip is not supported`);
    if (sequenceLens) {
      throw new Error(`${op} sequence_lens is not supported (every sequence must be full length)`);
    }
    this.x = x;
    this.spec = sameTypeAs(ctx, x);
    this.reversed = reversed;
    this.#gates = options.gates;
    this.W = ctx.requireConstant(w, `${op}'s W`);
    this.R = ctx.requireConstant(r, `${op}'s R`);
    this.B = b ? ctx.requireConstant(b, `${op}'s B`) : undefined;
    this.hidden = node.int("hidden_size", this.R.dims[2]);
    this.inputSize = this.W.dims[2];
    const dirs = reversed.length;
    const gatesH = options.gates * this.hidden;
    this.#expectShape("W", this.W, [dirs, gatesH, this.inputSize]);
    this.#expectShape("R", this.R, [dirs, gatesH, this.hidden]);
    if (this.B) this.#expectShape("B", this.B, [dirs, 2 * gatesH]);
    if (ctx.dims(x).length !== 3) {
      throw new Error(`${op}'s X must have rank 3; it has shape [${ctx.dims(x)}]`);
    }
    const each = options.activations.length;
    const given = node.strings("activations", []);
    if (given.length !== 0 && given.length !== each * dirs) {
      throw new Error(`${op} has ${given.length} activations, expected ${each * dirs}`);
    }
    this.activations = reversed.map((_, d) =>
      given.length === 0 ? options.activations : given.slice(d * each, (d + 1) * each)
    );
  }

  #expectShape(name: string, t: HostTensor, dims: readonly number[]): void {
    if (t.dims.join() !== dims.join()) {
      throw new Error(`${this.node.opType}'s ${name} has shape [${t.dims}], expected [${dims}]`);
    }
  }

  /** Refuses activations other than `defaults` (those NNAPI's cells, or GRU's sequence, have). */
  requireActivations(defaults: readonly string[]): void {
    for (const names of this.activations) {
      if (names.join().toLowerCase() !== defaults.join().toLowerCase()) {
        throw new Error(
          `${this.node.opType} activations ${names.join(", ")} are not supported ` +
            `(only ${defaults.join(", ")})`,
        );
      }
    }
  }

  /** A float constant of X's type. */
  constant(dims: readonly number[], values: ArrayLike<number>): BuiltOperand {
    return floatConstant(this.ctx, this.spec, dims, values);
  }

  /**
   * `count` rows from row `first` of direction `dir` of a tensor stacked by direction (W's
   * and R's gate rows; of B and P, single values); zeros when the tensor is absent.
   */
  rows(t: HostTensor | undefined, dir: number, first: number, count: number): Float64Array {
    if (!t) return hostValues(count);
    const row = t.dims.slice(2).reduce((a, b) => a * b, 1);
    const start = (dir * t.dims[1] + first) * row;
    return Float64Array.from(t.data.subarray(start, start + count * row));
  }

  /** Gate `gate` of W or R of direction `dir` as NNAPI weights [h, columns]. */
  gateWeights(t: HostTensor, dir: number, gate: number): BuiltOperand {
    const h = this.hidden;
    return this.constant([h, t.dims[2]], this.rows(t, dir, gate * h, h));
  }

  /** Wb + Rb of direction `dir` over `count` values from `first` (zeros without B). */
  biasSum(dir: number, first: number, count: number): Float64Array {
    const sum = this.rows(this.B, dir, first, count);
    const recurrent = this.rows(this.B, dir, this.#gates * this.hidden + first, count);
    return sum.map((v, i) => v + recurrent[i]);
  }

  /** The sequence length, which `why` needs known at conversion. */
  sequenceLength(why: string): number {
    const seq = this.ctx.dims(this.x)[0];
    if (seq === 0) {
      throw new Error(
        `${this.node.opType} ${why} needs the sequence length known at conversion ` +
          "(fix the input shapes)",
      );
    }
    return seq;
  }

  /**
   * Per direction, the initial state input `index` ([dirs, batch, h]) as [batch, h], or
   * undefined when it is omitted (zeros).
   */
  initialStates(index: number): (BuiltOperand | undefined)[] {
    const name = this.node.input(index);
    const h = this.hidden;
    return this.reversed.map((_, d) => {
      if (!name) return undefined;
      let state = this.ctx.operand(name);
      if (this.reversed.length > 1) {
        const begin = this.ctx.builder.constant("TENSOR_INT32", [3], new Int32Array([d, 0, 0]));
        const size = this.ctx.builder.constant("TENSOR_INT32", [3], new Int32Array([1, -1, -1]));
        [state] = this.ctx.emit("SLICE", [state, begin, size], [this.spec]);
      }
      const shape = this.ctx.builder.constant("TENSOR_INT32", [2], new Int32Array([-1, h]));
      return this.ctx.emit("RESHAPE", [state, shape], [this.spec])[0];
    });
  }

  /** An initial state for an NNAPI cell, which takes no omitted state: zeros if not given. */
  stateOrZeros(state: BuiltOperand | undefined): BuiltOperand {
    if (state) return state;
    const batch = this.ctx.dims(this.x)[1];
    if (batch === 0) {
      // The batch of X at execution: zeros FILLed to [batch, hidden] there.
      const x = this.ctx.operand(this.x).index;
      const shape = runtimeShape(this.ctx, [0, this.hidden], [
        { factors: [{ operand: x, axis: 1 }], scale: 1 },
        undefined,
      ])!;
      return filled(this.ctx, shape, 0, { ...this.spec, dims: [0, this.hidden] });
    }
    return this.constant([batch, this.hidden], hostValues(batch * this.hidden));
  }

  /** `sequence` ([seq, ...]) with its time axis reversed: a GATHER of constant indices. */
  reverseTime(sequence: BuiltOperand): BuiltOperand {
    const seq = this.ctx.dims(this.x)[0];
    const reversed = seq > 0
      ? this.ctx.builder.constant(
        "TENSOR_INT32",
        [seq],
        Int32Array.from({ length: seq }, (_, i) => seq - 1 - i),
      )
      : this.#reversedAtExecution();
    return this.ctx.emit("GATHER", [sequence, this.ctx.builder.int32(0), reversed], [this.spec])[0];
  }

  /** seq - 1, ..., 0 for a sequence length known only at execution: RANGE there. */
  #reversedAtExecution(): BuiltOperand {
    const int32 = { ...specOf("int32") };
    const x = this.ctx.operand(this.x).index;
    const last = extentOperand(this.ctx, { factors: [{ operand: x, axis: 0 }], scale: 1 });
    const minusOne = this.ctx.builder.constant("TENSOR_INT32", [1], Int32Array.of(-1));
    const none = this.ctx.builder.int32(0);
    const [start] = this.ctx.emit("ADD", [last, minusOne, none], [int32]);
    return this.ctx.emit("RANGE", [start, minusOne, minusOne], [{ ...int32, dims: [0] }])[0];
  }

  /** Whether output `index` is given and read. */
  wants(index: number): boolean {
    const name = this.node.outputs[index];
    return !!name && this.ctx.uses(name) > 0;
  }

  /**
   * Names output `index` after `parts` (one per direction) stacked on a new `axis`: Y's
   * [seq, batch, h] parts on axis 1, final states' [batch, h] on axis 0.
   */
  stackDirections(index: number, parts: readonly BuiltOperand[], axis: number): void {
    if (!this.wants(index)) return;
    const name = this.node.outputs[index];
    const at = this.ctx.builder.int32(axis);
    if (parts.length === 1) {
      return void this.ctx.emitAs(name, "EXPAND_DIMS", [parts[0], at], this.spec);
    }
    const expanded = parts.map((p) => this.ctx.emit("EXPAND_DIMS", [p, at], [this.spec])[0]);
    this.ctx.emitAs(name, "CONCATENATION", [...expanded, at], this.spec);
  }

  /**
   * Runs an LSTM or RNN on NNAPI's sequence operations and names Y and the final states: one
   * direction on the unidirectional operation (X and Y reversed in time for 'reverse'), both
   * on the bidirectional one, whose backward cell runs from the last step to the first.
   */
  emitSequence(operations: SequenceOperations): void {
    const k = operations.states;
    let sequences: BuiltOperand[];
    let states: BuiltOperand[][];
    if (this.reversed.length === 2) {
      const outputs = operations.bidirectional();
      sequences = outputs.slice(0, 2);
      states = [outputs.slice(2, 2 + k), outputs.slice(2 + k)];
    } else {
      const reverse = this.reversed[0];
      const x = this.ctx.operand(this.x);
      const [sequence, ...final] = operations.unidirectional(reverse ? this.reverseTime(x) : x, 0);
      sequences = this.wants(0) ? [reverse ? this.reverseTime(sequence) : sequence] : [];
      states = [final];
    }
    this.stackDirections(0, sequences, 1);
    for (let s = 0; s < k; s++) this.stackDirections(1 + s, states.map((d) => d[s]), 0);
  }
}
