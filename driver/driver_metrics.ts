/**
 * What the driver reports in `/metrics`: executions by status, refusals by limit, and gauges
 * (kernel threads and lanes, buffers, memory bytes per client, live compilations, the
 * execution queue, bursts, the build) read when the metrics render; the times of executions
 * are `execution/execution_metrics.ts`'s. Counters of known label values start at zero.
 */
import type { BufferRegistry } from "../memory/buffers.ts";
import type { MemoryPools } from "../memory/pools.ts";
import { DriverError, ERROR_STATUSES, LIMITS } from "../nnapi/errors.ts";
import type { OpenBursts } from "./burst/open_bursts.ts";
import type { Compilations } from "./compilation/compilations.ts";
import { DRIVER_VERSION } from "./compilation/plan_codec.ts";
import type { ExecutorPool } from "./execution/executors/pool.ts";
import type { ExecutionRunner } from "./execution/runner.ts";
import type { Metrics } from "../metrics/metrics.ts";

const EXECUTIONS = ["nnserve_executions_total", "Executions by status"] as const;
const REFUSALS = [
  "nnserve_refusals_total",
  "Requests refused by a limit of the service, by limit",
] as const;
const SPLIT_CALLS = [
  "nnserve_kernel_split_calls_total",
  "Kernel calls split across compute lanes (threads)",
] as const;
const BURST_POLLING = [
  "nnserve_burst_polling_seconds_total",
  "Seconds the service spent polling for the next requests of bursts and gRPC streams " +
  "(NNSERVE_BURST_POLLING_WINDOW)",
] as const;

/** Counts time spent polling for the next requests of bursts and gRPC streams. */
export function countBurstPolling(metrics: Metrics, seconds: number): void {
  metrics.count(...BURST_POLLING, {}, seconds);
}

/** Declares the driver's counters and registers its gauges over its parts. */
export function registerDriverMetrics(
  metrics: Metrics,
  parts: {
    threads: number;
    pool: ExecutorPool;
    buffers: BufferRegistry;
    memories: MemoryPools;
    compilations: Compilations;
    runner: ExecutionRunner;
    bursts: OpenBursts;
    replica: string;
  },
): void {
  metrics.declare(...EXECUTIONS, ["NONE", ...ERROR_STATUSES].map((status) => ({ status })));
  metrics.declare(...REFUSALS, LIMITS.map((limit) => ({ limit })));
  metrics.declare(...SPLIT_CALLS, [{}]);
  metrics.declare(...BURST_POLLING, [{}]);
  const { threads, pool, buffers, memories, compilations, runner, bursts } = parts;
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
    [
      "nnserve_batch_queued",
      "Executions waiting for their batch to form (dynamic batching)",
      () => runner.batchQueued,
    ],
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

/** Each registry's execution counters by status, found once. */
const executionCounters = new WeakMap<Metrics, Map<string, () => void>>();

/** Counts one execution by its NNAPI status (NONE when it succeeded). */
export function countExecution(metrics: Metrics, error?: unknown): void {
  const status = error === undefined
    ? "NONE"
    : error instanceof DriverError
    ? error.status
    : "GENERAL_FAILURE";
  let byStatus = executionCounters.get(metrics);
  if (!byStatus) executionCounters.set(metrics, byStatus = new Map());
  let count = byStatus.get(status);
  if (!count) byStatus.set(status, count = metrics.counter(...EXECUTIONS, { status }));
  count();
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
