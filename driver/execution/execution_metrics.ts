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
    : versionLabels(client, record.modelName, record.modelVersion ?? "1");
}

/** The labels of executions of a named model's version. */
export function versionLabels(client: string, name: string, version: string): ExecutionLabels {
  return { client, model: name, version };
}

/**
 * The series executions of one compilation by one client record into, found once (each
 * lookup by labels cost a tiny execution about a microsecond, six of them each run).
 */
export class ExecutionSeries {
  readonly #metrics: Metrics;
  readonly #labels: ExecutionLabels;
  readonly #queueWait: (seconds: number) => void;
  readonly #input: (seconds: number) => void;
  readonly #output: (seconds: number) => void;
  readonly #success: (seconds: number) => void;
  readonly #fail: (seconds: number) => void;
  readonly #compute = new Map<string, (seconds: number) => void>();

  constructor(metrics: Metrics, labels: ExecutionLabels) {
    this.#metrics = metrics;
    this.#labels = labels;
    this.#queueWait = metrics.series(...QUEUE_WAIT, labels, EXECUTION_BUCKETS);
    this.#input = metrics.series(...IO, { ...labels, phase: "input" }, EXECUTION_BUCKETS);
    this.#output = metrics.series(...IO, { ...labels, phase: "output" }, EXECUTION_BUCKETS);
    const outcome = (result: string) =>
      metrics.series(...OUTCOMES, { ...labels, result }, EXECUTION_BUCKETS, true);
    this.#success = outcome("success");
    this.#fail = outcome("fail");
  }

  /**
   * Records a finished execution's phases: input binding, queue wait, compute time per
   * device (the sum of that device's steps) and output delivery.
   */
  observeRun(
    run: { queuedUs: number; steps: readonly StepTiming[]; inputUs: number; outputUs: number },
  ): void {
    this.#queueWait(run.queuedUs / 1e6);
    this.#input(run.inputUs / 1e6);
    this.#output(run.outputUs / 1e6);
    const perDevice = new Map<string, number>();
    for (const step of run.steps) {
      perDevice.set(step.device, (perDevice.get(step.device) ?? 0) + step.onDeviceUs);
    }
    for (const [device, us] of perDevice) this.#computeOn(device)(us / 1e6);
  }

  /**
   * Records an execution's whole time in the driver (from `started` to `ended`, now by
   * default) and whether it succeeded.
   */
  observeOutcome(started: number, succeeded: boolean, ended = performance.now()): void {
    (succeeded ? this.#success : this.#fail)((ended - started) / 1000);
  }

  /** Records a batched run: its rows, and how long each of its executions waited for it. */
  observeBatch(rows: number, delaysUs: readonly number[]): void {
    this.#metrics.observe(...BATCH_SIZE, this.#labels, rows, BATCH_SIZE_BUCKETS);
    for (const us of delaysUs) {
      this.#metrics.observe(...BATCH_DELAY, this.#labels, us / 1e6, EXECUTION_BUCKETS);
    }
  }

  #computeOn(device: string): (seconds: number) => void {
    let series = this.#compute.get(device);
    if (!series) {
      series = this.#metrics.series(...COMPUTE, { ...this.#labels, device }, EXECUTION_BUCKETS);
      this.#compute.set(device, series);
    }
    return series;
  }
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
