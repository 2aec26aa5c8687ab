/**
 * The times of executions in `/metrics`: queue wait, compute time per device, input binding
 * and output delivery, and the whole time by result, per compilation and model; and the
 * Open Inference Protocol's statistics of a model, read from the same series.
 */
import { DURATION_BUCKETS, type Metrics } from "../../metrics/metrics.ts";
import type { StepTiming } from "../compilation/plan.ts";

const QUEUE_WAIT = [
  "nnserve_execution_queue_seconds",
  "Time executions waited for an executor, by model (0 for those run at once)",
] as const;
const COMPUTE = [
  "nnserve_execution_compute_seconds",
  "Time executions spent computing, by model and device (each device's steps)",
] as const;
const IO = [
  "nnserve_execution_io_seconds",
  "Time executions spent binding inputs and delivering outputs, by model and phase",
] as const;
const OUTCOMES = [
  "nnserve_execution_seconds",
  "Whole time of executions in the driver, by model and result (success, fail)",
] as const;

const BATCH_SIZE = [
  "nnserve_batch_size",
  "Rows of each batched run (dynamic batching), by model",
] as const;
const BATCH_DELAY = [
  "nnserve_batch_queue_delay_seconds",
  "Time executions waited for their batch to form (dynamic batching), by model",
] as const;

/** Batch sizes: powers of two up to 1024 rows. */
const BATCH_SIZE_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

/** Execution times are often well under a millisecond: buckets from 50 us. */
const EXECUTION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, ...DURATION_BUCKETS];

/**
 * The labels of an execution's series, bounded as the models are: its client, and its
 * model's name and version, or for a model without a name the compilation's id (version
 * empty), whose series go with it.
 */
export type ExecutionLabels = { client: string; model: string; version: string };

/** The labels of executions of a compilation (`record`: its id, model name and version). */
export function executionLabels(
  client: string,
  record: { id: string; modelName?: string; modelVersion?: string },
): ExecutionLabels {
  return record.modelName === undefined
    ? { client, model: record.id, version: "" }
    : { client, model: record.modelName, version: record.modelVersion ?? "1" };
}

/**
 * Records a finished execution's phases: input binding, queue wait, compute time per device
 * (the sum of that device's steps) and output delivery.
 */
export function observeExecution(
  metrics: Metrics,
  labels: ExecutionLabels,
  run: { queuedUs: number; steps: readonly StepTiming[]; inputUs: number; outputUs: number },
): void {
  metrics.observe(...QUEUE_WAIT, labels, run.queuedUs / 1e6, EXECUTION_BUCKETS);
  metrics.observe(...IO, { ...labels, phase: "input" }, run.inputUs / 1e6, EXECUTION_BUCKETS);
  metrics.observe(...IO, { ...labels, phase: "output" }, run.outputUs / 1e6, EXECUTION_BUCKETS);
  const perDevice = new Map<string, number>();
  for (const step of run.steps) {
    perDevice.set(step.device, (perDevice.get(step.device) ?? 0) + step.onDeviceUs);
  }
  for (const [device, us] of perDevice) {
    metrics.observe(...COMPUTE, { ...labels, device }, us / 1e6, EXECUTION_BUCKETS);
  }
}

/** Records a batched run: its rows, and how long each of its executions waited for it. */
export function observeBatch(
  metrics: Metrics,
  labels: ExecutionLabels,
  rows: number,
  delaysUs: readonly number[],
): void {
  metrics.observe(...BATCH_SIZE, labels, rows, BATCH_SIZE_BUCKETS);
  for (const us of delaysUs) metrics.observe(...BATCH_DELAY, labels, us / 1e6, EXECUTION_BUCKETS);
}

/** Records an execution's whole time in the driver and whether it succeeded. */
export function observeOutcome(
  metrics: Metrics,
  labels: ExecutionLabels,
  started: number,
  succeeded: boolean,
): void {
  const seconds = (performance.now() - started) / 1000;
  const result = succeeded ? "success" : "fail";
  metrics.observe(...OUTCOMES, { ...labels, result }, seconds, EXECUTION_BUCKETS);
}

/** One duration statistic of the Open Inference Protocol: how many, and nanoseconds in all. */
export interface DurationStatistic {
  count: number;
  ns: number;
}

/** A model's execution statistics, as the protocol's statistics extension reports them. */
export interface ModelStatistics {
  lastInferenceMs: number;
  success: DurationStatistic;
  fail: DurationStatistic;
  queue: DurationStatistic;
  computeInput: DurationStatistic;
  computeInfer: DurationStatistic;
  computeOutput: DurationStatistic;
}

/** The statistics of a model version's executions, from the same series `/metrics` shows. */
export function modelStatistics(metrics: Metrics, labels: ExecutionLabels): ModelStatistics {
  const { client, model, version } = labels;
  const stat = (totals: { count: number; sum: number }) => ({
    count: totals.count,
    ns: Math.round(totals.sum * 1e9),
  });
  const of = { client, model, version };
  const success = metrics.totals(OUTCOMES[0], { ...of, result: "success" });
  const fail = metrics.totals(OUTCOMES[0], { ...of, result: "fail" });
  const queue = metrics.totals(QUEUE_WAIT[0], of);
  return {
    lastInferenceMs: Math.max(success.lastMs, fail.lastMs),
    success: stat(success),
    fail: stat(fail),
    queue: stat(queue),
    computeInput: stat(metrics.totals(IO[0], { ...of, phase: "input" })),
    // Each execution's devices add up to its compute time: count executions, sum devices.
    computeInfer: { count: queue.count, ns: stat(metrics.totals(COMPUTE[0], of)).ns },
    computeOutput: stat(metrics.totals(IO[0], { ...of, phase: "output" })),
  };
}
