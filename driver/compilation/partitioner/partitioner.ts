/**
 * The partitioner: which device runs which operations, as NNAPI's ExecutionPlan and TVM's
 * BYOC flow decide it. Each operation carries the devices that support it (those with a
 * cost); consecutive operations on one device form one subgraph (a plan step); the choice
 * minimises the operations' costs plus the cost of moving tensors between memory spaces,
 * searched exactly over the run order (`search.ts`). Islands fall out of that: a short run
 * on another device that would force two transfers is absorbed by its neighbours whenever
 * that is cheaper, with no separate pruning pass.
 *
 * Execution preferences map onto the inputs, not onto code:
 * - FAST_SINGLE_ANSWER: objective "latency", costs in µs (capabilities' execTime × work).
 * - SUSTAINED_SPEED: objective "throughput". Successive executions pipeline through the
 *   devices and a device runs one subgraph at a time, so the steady-state rate is set by the
 *   busiest device: the largest per-device sum of subgraph costs (compute, the transfers into
 *   its space, and the model outputs it sends home). Ties break on latency. This is NP-hard:
 *   exact for small problems, heuristic beyond (`throughput.ts`; `optimal` says which).
 * - LOW_POWER: objective "latency" with energy in place of time (powerUsage × work, and the
 *   energy of a transfer): the sum is then the energy of one execution.
 *
 * Profile-guided partitioning is the same search fed with measurements: prepare each of
 * `candidateSubgraphs()` on its device, time one run step by step, and pass the per-operation
 * times as `costs` (and measured transfer rates as `transferCost`).
 *
 * Pure: data in, data out; no kernels, devices or HTTP.
 */
import { evaluate } from "./evaluate.ts";
import {
  indexProblem,
  type Objective,
  type Partition,
  type PartitionProblem,
  UnsupportedOperations,
} from "./problem.ts";
import { search } from "./search.ts";
import { balance } from "./throughput.ts";

export {
  type Objective,
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

/**
 * Pareto labels kept per step by the exact throughput search before it gives up: dominance
 * checks make each step quadratic in its front, so this stays well below `maxStates`.
 */
const PARETO_STATES = 500;

/** How `partition()` searches. */
export interface PartitionOptions {
  /** Default "latency". */
  objective?: Objective;
  /** Operations (model indexes) that must run on the named device. */
  pinned?: Record<number, string>;
  /** States kept per step; past it the result is near-optimal and `optimal` is false. */
  maxStates?: number;
}

/**
 * The cheapest plan for the objective. Throws `UnsupportedOperations` naming every operation
 * that no device in `problem.devices` (the allowed ones) supports.
 */
export function partition(problem: PartitionProblem, options: PartitionOptions = {}): Partition {
  const objective = options.objective ?? "latency";
  const maxStates = options.maxStates ?? DEFAULT_MAX_STATES;
  const ix = indexProblem(problem, options.pinned);
  const fastest = search(ix, "latency", { maxStates })!;
  const plan = evaluate(ix, fastest.devices, "latency", fastest.exact);
  if (objective === "latency") return plan;
  const paretoStates = Math.min(maxStates, PARETO_STATES);
  return balance(ix, fastest.devices, { maxStates, paretoStates });
}

/**
 * Each operation on its own cheapest device (ties: the earlier one), transfers ignored when
 * choosing but counted in the result: what the search improves on.
 */
export function naivePartition(
  problem: PartitionProblem,
  options: { objective?: Objective } = {},
): Partition {
  const ix = indexProblem(problem);
  const devices = ix.operations.map((op) =>
    op.allowed.reduce((a, b) => op.costs[b]! < op.costs[a]! ? b : a)
  );
  return evaluate(ix, devices, options.objective ?? "latency", false);
}

/** The plan for a given device per operation (model index → device name). */
export function evaluateAssignment(
  problem: PartitionProblem,
  assignment: Record<number, string>,
  options: { objective?: Objective } = {},
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
  return evaluate(ix, devices, options.objective ?? "latency", false);
}

/**
 * The fallback when a device fails to prepare a subgraph it said it supports: that
 * subgraph's operations move to `device` (e.g. the reference CPU), every other operation
 * stays where it was, neighbours on the same device merge, and costs are recomputed. (For a
 * fresh optimum around the move instead, call `partition()` with those operations pinned.)
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
  return evaluateAssignment(problem, assignment, { objective: change.partition.objective });
}

/** A run of operations one device could prepare and time as one subgraph. */
export interface CandidateSubgraph {
  device: string;
  /** Model operation indexes, consecutive in run order. */
  operations: number[];
}

/**
 * What profile-guided partitioning times: per device, each maximal run of consecutive
 * operations it supports, cut into pieces of at most `maxLength` (bounding preparation
 * time). Support is read from the keys of `costs`; their values are not used.
 */
export function candidateSubgraphs(
  problem: PartitionProblem,
  options: { maxLength?: number } = {},
): CandidateSubgraph[] {
  const maxLength = options.maxLength ?? Infinity;
  if (!(maxLength >= 1)) throw new RangeError(`maxLength is ${maxLength}, expected at least 1`);
  const candidates: CandidateSubgraph[] = [];
  for (const { name } of problem.devices) {
    let run: CandidateSubgraph | undefined;
    for (const op of problem.operations) {
      if (!Object.hasOwn(op.costs, name)) {
        run = undefined;
        continue;
      }
      if (run === undefined || run.operations.length >= maxLength) {
        run = { device: name, operations: [] };
        candidates.push(run);
      }
      run.operations.push(op.index);
    }
  }
  return candidates;
}
