/**
 * What the driver reports in `/metrics`: executions by status, queue wait and compute time
 * per compilation and device, refusals by limit, and gauges (kernel threads and lanes,
 * buffers, memory bytes per client, live compilations, the execution queue, bursts, the
 * build) read when the metrics render. Counters of known label values start at zero.
 */
import type { BufferRegistry } from "../memory/buffers.ts";
import type { MemoryPools } from "../memory/pools.ts";
import { DriverError, ERROR_STATUSES, LIMITS } from "../nnapi/errors.ts";
import type { OpenBursts } from "./burst/open_bursts.ts";
import type { Compilations } from "./compilation/compilations.ts";
import { DRIVER_VERSION } from "./compilation/plan_codec.ts";
import type { ExecutorPool } from "./execution/executors/pool.ts";
import { DURATION_BUCKETS, type Metrics } from "../metrics/metrics.ts";
import type { StepTiming } from "./execution/step_timing.ts";

const EXECUTIONS = ["nnserve_executions_total", "Executions by status"] as const;
const REFUSALS = [
  "nnserve_refusals_total",
  "Requests refused by a limit of the service, by limit",
] as const;
const SPLIT_CALLS = [
  "nnserve_kernel_split_calls_total",
  "Kernel calls split across compute lanes (threads)",
] as const;
const QUEUE_WAIT = [
  "nnserve_execution_queue_seconds",
  "Time executions waited for an executor, by compilation (0 for those run at once)",
] as const;
const COMPUTE = [
  "nnserve_execution_compute_seconds",
  "Time executions spent computing, by compilation and device (each device's steps)",
] as const;
const IO = [
  "nnserve_execution_io_seconds",
  "Time executions spent binding inputs and delivering outputs, by compilation and phase",
] as const;
const OUTCOMES = [
  "nnserve_execution_seconds",
  "Whole time of executions in the driver, by compilation and result (success, fail)",
] as const;

/** Execution times are often well under a millisecond: buckets from 50 us. */
const EXECUTION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, ...DURATION_BUCKETS];

/** Declares the driver's counters and registers its gauges over its parts. */
export function registerDriverMetrics(
  metrics: Metrics,
  parts: {
    threads: number;
    pool: ExecutorPool;
    buffers: BufferRegistry;
    memories: MemoryPools;
    compilations: Compilations;
    bursts: OpenBursts;
    replica: string;
  },
): void {
  metrics.declare(...EXECUTIONS, ["NONE", ...ERROR_STATUSES].map((status) => ({ status })));
  metrics.declare(...REFUSALS, LIMITS.map((limit) => ({ limit })));
  metrics.declare(...SPLIT_CALLS, [{}]);
  const { threads, pool, buffers, memories, compilations, bursts } = parts;
  const gauges: [string, string, () => number][] = [
    [
      "nnserve_kernel_threads_free",
      `Kernel threads free of the ${threads} all executions share`,
      () => pool.freeThreads,
    ],
    [
      "nnserve_compute_lanes_ready",
      "Compute lanes (kernel threads besides each executor's own) started and ready",
      () => pool.readyLanes,
    ],
    ["nnserve_buffers_live", "Driver-managed buffers allocated", () => buffers.stats().count],
    ["nnserve_buffers_bytes", "Bytes held by driver-managed buffers", () => buffers.stats().bytes],
    ["nnserve_compilations_live", "Prepared compilations in memory", () => compilations.size],
    ["nnserve_executions_queued", "Executions waiting for a worker", () => pool.queued],
    ["nnserve_bursts_active", "Open burst sessions", () => bursts.sessions.size],
    [
      "nnserve_burst_slots",
      "Memory slots mapped by open bursts",
      () => [...bursts.sessions].reduce((n, b) => n + b.stats.slots, 0),
    ],
    [
      "nnserve_burst_requests_in_flight",
      "Burst requests held (queued or running)",
      () => bursts.inFlight(),
    ],
  ];
  for (const [name, help, read] of gauges) metrics.gauge(name, help, read);
  metrics.gaugeSeries(
    "nnserve_memory_bytes",
    "Bytes of memory pools per client (deleted ones still held by a burst included)",
    async () => [...await memories.usageByClient()].map(([client, bytes]) => [{ client }, bytes]),
  );
  metrics.gauge("nnserve_build_info", "The running build on this replica (always 1)", () => 1, {
    replica: parts.replica,
    driver: DRIVER_VERSION,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
  });
}

/** Counts one execution by its NNAPI status (NONE when it succeeded). */
export function countExecution(metrics: Metrics, error?: unknown): void {
  const status = error === undefined
    ? "NONE"
    : error instanceof DriverError
    ? error.status
    : "GENERAL_FAILURE";
  metrics.count(...EXECUTIONS, { status });
}

/** Counts the kernel calls of a run that were split across compute lanes. */
export function countSplitCalls(metrics: Metrics, calls: number): void {
  metrics.count(...SPLIT_CALLS, {}, calls);
}

/** Counts a refusal by one of the service's limits; other errors are not refusals. */
export function countRefusal(metrics: Metrics, error: unknown): void {
  if (error instanceof DriverError && error.details.limit) {
    metrics.count(...REFUSALS, { limit: error.details.limit });
  }
}

/** The labels of an execution's series: its compilation and the compilation's model. */
export type ExecutionLabels = { compilation: string; model: string };

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

/** The statistics of a model's executions, from the same series `/metrics` shows. */
export function modelStatistics(metrics: Metrics, model: string): ModelStatistics {
  const stat = (totals: { count: number; sum: number }) => ({
    count: totals.count,
    ns: Math.round(totals.sum * 1e9),
  });
  const success = metrics.totals(OUTCOMES[0], { model, result: "success" });
  const fail = metrics.totals(OUTCOMES[0], { model, result: "fail" });
  const queue = metrics.totals(QUEUE_WAIT[0], { model });
  return {
    lastInferenceMs: Math.max(success.lastMs, fail.lastMs),
    success: stat(success),
    fail: stat(fail),
    queue: stat(queue),
    computeInput: stat(metrics.totals(IO[0], { model, phase: "input" })),
    // Each execution's devices add up to its compute time: count executions, sum devices.
    computeInfer: { count: queue.count, ns: stat(metrics.totals(COMPUTE[0], { model })).ns },
    computeOutput: stat(metrics.totals(IO[0], { model, phase: "output" })),
  };
}
