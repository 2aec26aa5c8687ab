/**
 * The partitioner: which device runs which operations, as NNAPI's ExecutionPlan and TVM's
 * BYOC flow decide it. Each operation carries the devices that support it (those with a
 * cost); consecutive operations on one device form one subgraph (a plan step); the choice
 * minimises the operations' costs plus the cost of moving tensors between memory spaces,
 * searched exactly over the run order (`search.ts`) after an exact pre-pass drops memory
 * spaces from groups of operations where they cannot pay (`hopeless_spaces.ts`). Islands
 * fall out of that: a short run on another device that would force two transfers is
 * absorbed by its neighbours whenever that is cheaper.
 *
 * One objective, latency (costs in µs: capabilities' execTime × work), for every execution
 * preference:
 * - FAST_SINGLE_ANSWER: one execution's latency.
 * - SUSTAINED_SPEED: the same, as NNAPI's runtime picks devices by execTime for both.
 *   Balancing load over devices would pay only if successive executions pipelined through
 *   them, and nothing here does: one executor runs a plan's steps one after the other, and
 *   the CPU devices (and the software gpu adapter) share the same cores.
 * - LOW_POWER: every device here draws power in proportion to its busy time (the gpu adapter
 *   is software on the same cores), so energy ranks plans as latency does.
 *
 * Profile-guided partitioning (`profile.ts`) is the same search fed with measurements: the
 * per-operation times of probe runs on each device replace the static costs.
 *
 * Pure: data in, data out; no kernels, devices or HTTP.
 */
import { evaluate } from "./evaluate.ts";
import {
  indexProblem,
  type Partition,
  type PartitionProblem,
  UnsupportedOperations,
} from "./problem.ts";
import { search } from "./search.ts";
import { withoutHopelessSpaces } from "./hopeless_spaces.ts";

export {
  type Partition,
  type PartitionDevice,
  type PartitionOperation,
  type PartitionProblem,
  type Subgraph,
  type Transfer,
  UnsupportedOperations,
} from "./problem.ts";

/** States kept per step before the search turns into a beam (see `search.ts`). */
export const DEFAULT_MAX_STATES = 20_000;

/** How `partition()` searches. */
export interface PartitionOptions {
  /** States kept per step; past it the result is near-optimal and `optimal` is false. */
  maxStates?: number;
}

/**
 * The cheapest plan: the least sum of step costs. Throws `UnsupportedOperations` naming every
 * operation that no device in `problem.devices` (the allowed ones) supports.
 */
export function partition(problem: PartitionProblem, options: PartitionOptions = {}): Partition {
  const ix = indexProblem(withoutHopelessSpaces(problem));
  const fastest = search(ix, { maxStates: options.maxStates ?? DEFAULT_MAX_STATES });
  return evaluate(ix, fastest.devices, fastest.exact);
}

/** The plan for a given device per operation (model index → device name). */
export function evaluateAssignment(
  problem: PartitionProblem,
  assignment: Record<number, string>,
): Partition {
  const ix = indexProblem(problem);
  const position = new Map(problem.devices.map((d, i) => [d.name, i]));
  const devices = ix.operations.map((op) => {
    const d = position.get(assignment[op.index]);
    if (d === undefined) {
      throw new Error(`No device named ${assignment[op.index]} for operation ${op.index}`);
    }
    if (op.costs[d] === undefined) {
      throw new UnsupportedOperations(
        [op.index],
        `Device ${assignment[op.index]} does not support operation ${op.index}`,
      );
    }
    return d;
  });
  return evaluate(ix, devices, false);
}

/**
 * The fallback when a device fails to prepare a subgraph it said it supports: that
 * subgraph's operations move to `device` (e.g. the reference CPU), every other operation
 * stays where it was, neighbours on the same device merge, and costs are recomputed.
 */
export function reassign(
  problem: PartitionProblem,
  change: { partition: Partition; subgraph: number; device: string },
): Partition {
  const moved = change.partition.subgraphs[change.subgraph];
  if (moved === undefined) throw new RangeError(`No subgraph ${change.subgraph}`);
  const assignment: Record<number, string> = {};
  for (const g of change.partition.subgraphs) {
    for (const op of g.operations) assignment[op] = g === moved ? change.device : g.device;
  }
  const unsupported = problem.operations.filter((op) =>
    assignment[op.index] === change.device && !Object.hasOwn(op.costs, change.device)
  ).map((op) => op.index);
  if (unsupported.length > 0) {
    throw new UnsupportedOperations(
      unsupported,
      `Device ${change.device} does not support operations ${unsupported.join(", ")}`,
    );
  }
  return evaluateAssignment(problem, assignment);
}
