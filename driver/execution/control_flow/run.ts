/**
 * IF and WHILE at execution (what NNAPI's CpuExecutor does for them): IF runs the branch
 * its condition selects; WHILE runs its condition and body subgraphs until the condition is
 * false, under the loop timeout and the execution's deadline.
 *
 * They live here, not in a kernel: a kernel (`operations/operation.ts`) sees its tensors
 * only, while these operations run whole referenced subgraphs, decide output shapes only by
 * running them, and must watch the clock. The executable hands them a runner per referenced
 * subgraph and places what they return.
 */
import { DriverError } from "../../../nnapi/errors.ts";
import type { Tensor } from "../../../nnapi/tensor.ts";
import { subgraphIndex } from "../../../operations/common/control_flow.ts";
import { IF_INPUTS } from "../../../operations/if.ts";
import { WHILE_INPUTS } from "../../../operations/while.ts";

/** NNAPI's default loop timeout (`ANeuralNetworks_getDefaultLoopTimeout`): 2 s. */
export const DEFAULT_LOOP_TIMEOUT_MS = 2_000;
/** NNAPI's maximum loop timeout (`ANeuralNetworks_getMaximumLoopTimeout`): 15 s. */
export const MAX_LOOP_TIMEOUT_MS = 15_000;

/** The time limits an execution's loops obey. */
export interface RunLimits {
  /** How long one WHILE loop may run, in ms (NNAPI's loop timeout). */
  loopTimeoutMs: number;
  /** When the whole execution must stop (`Date.now()` ms), if it has a deadline. */
  deadline?: number;
}

/** The limits of an execution that asked for none. */
export const DEFAULT_RUN_LIMITS: RunLimits = { loopTimeoutMs: DEFAULT_LOOP_TIMEOUT_MS };

/**
 * The loop timeout an execution asked for (ms), clamped to the maximum as
 * `ANeuralNetworksExecution_setLoopTimeout` does; the default when it asked for none.
 */
export function loopTimeoutMs(requested: number | undefined): number {
  return Math.min(requested ?? DEFAULT_LOOP_TIMEOUT_MS, MAX_LOOP_TIMEOUT_MS);
}

/** Runs one referenced subgraph on fully shaped inputs and returns its (fresh) outputs. */
export interface SubgraphRunner {
  readonly outputCount: number;
  run(inputs: readonly Tensor[], limits: RunLimits): Tensor[];
}

/** What a control-flow operation needs besides its input tensors. */
export interface ControlFlowContext {
  /** The runner of referenced subgraph `index`. */
  subgraph(index: number): SubgraphRunner;
  limits: RunLimits;
  /** The operation, for messages: `operation 3 (WHILE)`. */
  what: string;
}

function isTrue(condition: Tensor): boolean {
  return condition.data![0] !== 0;
}

/** IF: the outputs of the branch the condition selects, run on inputs 3.. */
export function runIf(inputs: readonly Tensor[], context: ControlFlowContext): Tensor[] {
  const chosen = isTrue(inputs[IF_INPUTS.condition]) ? IF_INPUTS.thenBranch : IF_INPUTS.elseBranch;
  const branch = context.subgraph(subgraphIndex(inputs[chosen].data));
  return branch.run(inputs.slice(IF_INPUTS.firstInput), context.limits);
}

function stopAt(context: ControlFlowContext, iterations: number, started: number): void {
  const { loopTimeoutMs, deadline } = context.limits;
  const elapsed = performance.now() - started;
  if (elapsed > loopTimeoutMs) {
    throw new DriverError(
      "MISSED_DEADLINE_TRANSIENT",
      `${context.what}: the loop ran ${iterations} iterations in ${
        Math.round(elapsed)
      } ms, past its loop timeout of ${loopTimeoutMs} ms`,
    );
  }
  if (deadline !== undefined && Date.now() >= deadline) {
    throw new DriverError(
      "MISSED_DEADLINE_TRANSIENT",
      `${context.what}: the deadline passed while the loop ran (after ${iterations} iterations)`,
    );
  }
}

/**
 * WHILE: runs the body on the m input-output, k state-only and n input-only values while
 * the condition holds, each iteration's m + k outputs becoming the next iteration's first
 * inputs; returns the final m. Fails with MISSED_DEADLINE_TRANSIENT once the loop has run
 * past the loop timeout or the execution's deadline (checked before every iteration).
 */
export function runWhile(
  inputs: readonly Tensor[],
  context: ControlFlowContext & { outputCount: number },
): Tensor[] {
  const condition = context.subgraph(subgraphIndex(inputs[WHILE_INPUTS.condition].data));
  const body = context.subgraph(subgraphIndex(inputs[WHILE_INPUTS.body].data));
  const initial = inputs.slice(WHILE_INPUTS.firstInput);
  const carried = body.outputCount;
  let values = initial;
  const started = performance.now();
  for (let iterations = 0;; iterations++) {
    stopAt(context, iterations, started);
    if (!isTrue(condition.run(values, context.limits)[0])) break;
    values = [...body.run(values, context.limits), ...values.slice(carried)];
  }
  // A loop that never ran returns its inputs: copies, so no output aliases an input.
  return values.slice(0, context.outputCount).map((value) =>
    initial.includes(value) ? { ...value, data: value.data!.slice() } : value
  );
}
