/**
 * Fusion decided at preparation: runs of consecutive steps on one host device, each taking
 * the previous one's only output, which nothing else reads (a temporary), are offered to
 * the device's `chains` (`cpu-simd` fuses element-wise chains into one blocked pass). The
 * plan marks the first step of each fused run with its length; executors bind the pass and
 * skip the other steps on planned shapes.
 */
import { byteSize } from "../../nnapi/tensor.ts";
import type { ArenaLayout } from "./arena_layout.ts";
import type { ChainLink } from "../devices/device.ts";
import { stepOperands } from "../devices/host_device.ts";
import { hostDeviceNamed } from "../devices/device_list.ts";
import type { Model } from "../model/model.ts";
import type { PreparedStep } from "./plan.ts";
import type { Kernel, PrepareInput } from "../../operations/operation.ts";

/** How many input slots of the plan (and model outputs) read each operand. */
function readerCounts(model: Model, steps: readonly PreparedStep[]): Map<number, number> {
  const readers = new Map<number, number>();
  const read = (i: number) => readers.set(i, (readers.get(i) ?? 0) + 1);
  for (const step of steps) step.inputs.forEach(read);
  model.outputIndexes.forEach(read);
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
  model: Model,
  arena: ArenaLayout,
  input: number,
  output: number,
): boolean {
  const [a, b] = [arena.offsets[input], arena.offsets[output]];
  if (a < 0 || b < 0) return true;
  const size = (i: number) => byteSize(model.operands[i].type, model.operands[i].dimensions);
  if (a === b && size(input) === size(output)) return true;
  return a + size(input) <= b || b + size(output) <= a;
}

/** Marks the fused runs of `steps` (a plan with an arena: every shape known). */
export function planChains(model: Model, steps: PreparedStep[], arena: ArenaLayout): void {
  const readers = readerCounts(model, steps);
  const link = (s: number): ChainLink => ({
    type: steps[s].type,
    operands: stepOperands(model, model.operations[steps[s].operation]),
  });
  for (let s = 0; s < steps.length;) {
    const chains = hostDeviceNamed(steps[s].device)?.chains;
    const links = [link(s)];
    for (let t = s + 1; chains && t < steps.length && steps[t].device === steps[s].device; t++) {
      const [value, ...others] = steps[t - 1].outputs;
      const temporary = model.operands[value].lifetime === "TEMPORARY_VARIABLE";
      const chained = steps[t].inputs.indexOf(value);
      if (others.length > 0 || !temporary || readers.get(value) !== 1 || chained < 0) break;
      links.push({ ...link(t), chained });
    }
    let count = chains && links.length >= 2 ? chains.fusable(links) : 0;
    const output = steps[s + count - 1]?.outputs[0];
    const streams = links.slice(0, count).every((l, k) =>
      steps[s + k].inputs.every((input, i) =>
        i === l.chained || safeToStream(model, arena, input, output)
      )
    );
    if (!streams) count = 0;
    if (count >= 2) {
      steps[s].chain = count;
      s += count;
    } else s++;
  }
}

/** A fused run bound in an executor: its pass and the operands it reads and writes. */
export interface FusedPass {
  kernel: Kernel;
  inputs: number[];
  outputs: number[];
}

/**
 * The passes of a plan's fused runs, by the index of their first step (`info` gives an
 * operand as bound: constants with their values); a run its device cannot bind is absent
 * (its steps then run one by one).
 */
export function bindFusedRuns(
  steps: readonly PreparedStep[],
  info: (operand: number) => PrepareInput,
): Map<number, FusedPass> {
  const passes = new Map<number, FusedPass>();
  steps.forEach((step, s) => {
    const chains = step.chain ? hostDeviceNamed(step.device)?.chains : undefined;
    if (!chains || !step.chain) return;
    const run = steps.slice(s, s + step.chain);
    const links = run.map((t, k) => ({
      type: t.type,
      operands: { inputs: t.inputs.map(info), outputs: t.outputs.map(info) },
      ...(k > 0 ? { chained: t.inputs.indexOf(run[k - 1].outputs[0]) } : {}),
    }));
    const kernel = chains.bind(links);
    if (!kernel) return;
    passes.set(s, {
      kernel,
      inputs: run.flatMap((t) => t.inputs),
      outputs: run[run.length - 1].outputs,
    });
  });
  return passes;
}
