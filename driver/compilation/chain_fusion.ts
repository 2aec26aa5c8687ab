/**
 * Fusion of runs of consecutive steps on one host device, each taking the previous one's
 * only output, which nothing else reads (a temporary): such runs are offered to the
 * device's `chains` (`cpu-simd` fuses element-wise chains into one blocked pass). Decided on
 * full shapes and an arena layout: at preparation when every shape is known then (the plan
 * marks the first step of each run with its length), else by an executor for the shapes an
 * execution brings; executors bind the pass and skip the run's other steps.
 */
import { byteSize, type TensorData, type TensorInfo } from "../../nnapi/tensor.ts";
import type { Lifetime } from "../../nnapi/types.ts";
import type { ArenaGraph, ArenaLayout } from "./arena_layout.ts";
import type { ChainLink } from "../devices/device.ts";
import { hostDeviceNamed } from "../devices/device_list.ts";
import type { PreparedStep } from "./plan.ts";
import type { Kernel, PrepareInput } from "../../operations/operation.ts";

/** What fusion reads of a graph: its operands (full shapes) and constant values. */
export interface ChainGraph extends ArenaGraph {
  operands: readonly (TensorInfo & { lifetime: Lifetime })[];
  /** A constant's value; null for an omitted operand; undefined otherwise. */
  value(operand: number): TensorData | null | undefined;
}

/** How many input slots of the steps (and graph outputs) read each operand. */
function readerCounts(graph: ChainGraph, steps: readonly PreparedStep[]): Map<number, number> {
  const readers = new Map<number, number>();
  const read = (i: number) => readers.set(i, (readers.get(i) ?? 0) + 1);
  for (const step of steps) step.inputs.forEach(read);
  graph.outputIndexes.forEach(read);
  return readers;
}

/**
 * Whether the pass may write the run's output while it still reads `input`: their arena
 * bytes are disjoint, or exactly the same bytes (each block is read before it is
 * overwritten). Any other overlap is not: a partial one would overwrite input blocks not yet
 * read, and a smaller input at the output's offset (a broadcast row or scalar, which every
 * block reads again) would be overwritten by the first block.
 */
function safeToStream(
  graph: ChainGraph,
  arena: ArenaLayout,
  input: number,
  output: number,
): boolean {
  const [a, b] = [arena.offsets[input], arena.offsets[output]];
  if (a < 0 || b < 0) return true;
  const size = (i: number) => byteSize(graph.operands[i].type, graph.operands[i].shape);
  if (a === b && size(input) === size(output)) return true;
  return a + size(input) <= b || b + size(output) <= a;
}

/**
 * The fused runs of `steps` on `graph`'s shapes laid out in `arena`: the length of each run,
 * by the index of its first step.
 */
export function fusedRuns(
  graph: ChainGraph,
  steps: readonly PreparedStep[],
  arena: ArenaLayout,
): Map<number, number> {
  const runs = new Map<number, number>();
  const readers = readerCounts(graph, steps);
  const info = (i: number): PrepareInput => ({ ...graph.operands[i], value: graph.value(i) });
  const link = (s: number): ChainLink => ({
    type: steps[s].type,
    operands: { inputs: steps[s].inputs.map(info), outputs: steps[s].outputs.map(info) },
  });
  for (let s = 0; s < steps.length;) {
    const chains = hostDeviceNamed(steps[s].device)?.chains;
    if (!chains) { // a device that fuses nothing (or runs its steps as units)
      s++;
      continue;
    }
    const links = [link(s)];
    for (let t = s + 1; t < steps.length && steps[t].device === steps[s].device; t++) {
      const [value, ...others] = steps[t - 1].outputs;
      const temporary = graph.operands[value].lifetime === "TEMPORARY_VARIABLE";
      const chained = steps[t].inputs.indexOf(value);
      if (others.length > 0 || !temporary || readers.get(value) !== 1 || chained < 0) break;
      links.push({ ...link(t), chained });
    }
    let count = links.length >= 2 ? chains.fusable(links) : 0;
    const output = steps[s + count - 1]?.outputs[0];
    const streams = links.slice(0, count).every((l, k) =>
      steps[s + k].inputs.every((input, i) =>
        i === l.chained || safeToStream(graph, arena, input, output)
      )
    );
    if (!streams) count = 0;
    if (count >= 2) {
      runs.set(s, count);
      s += count;
    } else s++;
  }
  return runs;
}

/** A fused run bound in an executor: its pass and the operands it reads and writes. */
export interface FusedPass {
  kernel: Kernel;
  /** How many steps it runs. */
  steps: number;
  inputs: number[];
  outputs: number[];
}

/**
 * The passes of fused runs (`runs`: length by first step), by the index of their first step
 * (`info` gives an operand as bound: constants with their values); a run its device cannot
 * bind is absent (its steps then run one by one).
 */
export function bindFusedRuns(
  steps: readonly PreparedStep[],
  runs: ReadonlyMap<number, number>,
  info: (operand: number) => PrepareInput,
): Map<number, FusedPass> {
  const passes = new Map<number, FusedPass>();
  runs.forEach((length, s) => {
    const chains = hostDeviceNamed(steps[s].device)?.chains;
    if (!chains) return;
    const run = steps.slice(s, s + length);
    const links = run.map((t, k) => ({
      type: t.type,
      operands: { inputs: t.inputs.map(info), outputs: t.outputs.map(info) },
      ...(k > 0 ? { chained: t.inputs.indexOf(run[k - 1].outputs[0]) } : {}),
    }));
    const kernel = chains.bind(links);
    if (!kernel) return;
    passes.set(s, {
      kernel,
      steps: length,
      inputs: run.flatMap((t) => t.inputs),
      outputs: run[run.length - 1].outputs,
    });
  });
  return passes;
}
