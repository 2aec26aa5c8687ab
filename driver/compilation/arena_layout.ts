/**
 * Where an execution's intermediate and output tensors live: one buffer per execution (the
 * arena), each tensor at an aligned offset, tensors whose lifetimes do not overlap sharing
 * bytes. Planned at preparation when every shape is known then, else by each executor for
 * the input shapes an execution brings (`execution/shape_bindings.ts`).
 */
import { byteSize, isFullySpecified } from "../../nnapi/tensor.ts";
import type { Lifetime, OperandType, OperationType } from "../../nnapi/types.ts";

/** Alignment of tensors in the constant buffer and the arena (a cache line, SIMD-friendly). */
export const TENSOR_ALIGNMENT = 64;

/** `n` rounded up to {@link TENSOR_ALIGNMENT}. */
export function align(n: number): number {
  return Math.ceil(n / TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT;
}

/** Byte offsets of every intermediate/output tensor in one per-execution buffer. */
export interface ArenaLayout {
  size: number;
  /** Per operand; -1 for operands that do not live in the arena. */
  offsets: number[];
}

/** What the layout reads of a step: its operation type and operands. */
interface Step {
  type: OperationType;
  inputs: readonly number[];
  outputs: readonly number[];
}

/** What the layout reads of a graph: each operand's type, lifetime and (full) shape. */
export interface ArenaGraph {
  operands: readonly { type: OperandType; lifetime: Lifetime; shape: readonly number[] }[];
  inputIndexes: readonly number[];
  outputIndexes: readonly number[];
}

/** Operations whose output is their first input's bytes under another shape. */
const SAME_BYTES: ReadonlySet<string> = new Set(["RESHAPE", "SQUEEZE", "EXPAND_DIMS"]);

/**
 * For each operand, the operand whose arena bytes it shares (itself if none): the output of
 * a RESHAPE, SQUEEZE or EXPAND_DIMS of an arena tensor of the same type and size is those
 * same bytes, so the step copies nothing. Every operand is written once, so sharing is
 * safe; the shared bytes live from the first write to the last read of any of them.
 */
function sharedBytes(
  graph: ArenaGraph,
  steps: readonly Step[],
  inArena: (i: number) => boolean,
) {
  const root = graph.operands.map((_, i) => i);
  const find = (i: number): number => (root[i] === i ? i : (root[i] = find(root[i])));
  for (const step of steps) {
    const [input] = step.inputs;
    const [output] = step.outputs;
    if (!SAME_BYTES.has(step.type)) continue;
    const a = graph.operands[input], b = graph.operands[output];
    if (!inArena(input) || !inArena(output) || a.type !== b.type) continue;
    if (byteSize(a.type, a.shape) !== byteSize(b.type, b.shape)) continue;
    root[find(output)] = find(input);
  }
  return graph.operands.map((_, i) => find(i));
}

/** Whether operand `i` lives in the arena: a temporary or a model output. */
function livesInArena(graph: ArenaGraph, i: number): boolean {
  const { lifetime } = graph.operands[i];
  return lifetime === "TEMPORARY_VARIABLE" || lifetime === "MODEL_OUTPUT";
}

/**
 * Whether the graph's declared shapes can be laid out at preparation: every model input and
 * every tensor of the arena has all its extents known.
 */
export function arenaShapesKnown(graph: ArenaGraph): boolean {
  return graph.operands.every((o, i) => !livesInArena(graph, i) || isFullySpecified(o.shape)) &&
    graph.inputIndexes.every((i) => isFullySpecified(graph.operands[i].shape));
}

/**
 * Greedy arena placement by decreasing size: an operand may reuse bytes of operands whose
 * lifetimes (first write to last read) do not overlap. Model outputs live to the end.
 * Operands that are one another's bytes under another shape ({@link sharedBytes}) are
 * placed once, for their joint lifetime. Every shape must be the real one (a 0 extent is
 * empty, not unknown). Operands in `elsewhere` live outside the arena (offset -1).
 */
export function layoutArena(
  graph: ArenaGraph,
  steps: readonly Step[],
  elsewhere?: ReadonlySet<number>,
): ArenaLayout {
  const { operands } = graph;
  const inArena = (i: number) => livesInArena(graph, i) && !elsewhere?.has(i);
  const first = new Array<number>(operands.length).fill(-1);
  const last = new Array<number>(operands.length).fill(-1);
  steps.forEach((step, s) => {
    for (const o of step.outputs) first[o] = s;
    for (const o of step.inputs) last[o] = s;
  });
  for (const o of graph.outputIndexes) last[o] = steps.length;
  const shared = sharedBytes(graph, steps, inArena);
  const groups = new Map<number, { i: number; size: number; from: number; to: number }>();
  for (let i = 0; i < operands.length; i++) {
    if (!inArena(i)) continue;
    const size = align(byteSize(operands[i].type, operands[i].shape));
    const from = first[i], to = Math.max(last[i], first[i]);
    const group = groups.get(shared[i]);
    if (!group) {
      groups.set(shared[i], { i: shared[i], size, from, to });
    } else {
      group.from = Math.min(group.from, from);
      group.to = Math.max(group.to, to);
    }
  }
  const candidates = [...groups.values()].sort((a, b) => b.size - a.size || a.i - b.i);
  const offsets = new Array<number>(operands.length).fill(-1);
  const placed: { offset: number; size: number; from: number; to: number }[] = [];
  let size = 0;
  for (const c of candidates) {
    const conflicts = placed
      .filter((p) => p.from <= c.to && c.from <= p.to)
      .sort((a, b) => a.offset - b.offset);
    let offset = 0;
    for (const p of conflicts) {
      if (offset + c.size <= p.offset) break;
      offset = Math.max(offset, p.offset + p.size);
    }
    offsets[c.i] = offset;
    placed.push({ offset, size: c.size, from: c.from, to: c.to });
    size = Math.max(size, offset + c.size);
  }
  for (let i = 0; i < operands.length; i++) {
    if (inArena(i)) offsets[i] = offsets[shared[i]];
  }
  return { size, offsets };
}
