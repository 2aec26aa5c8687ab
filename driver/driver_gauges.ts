/**
 * The driver's gauges in `/metrics`: kernel threads and lanes, buffers, live compilations,
 * the execution queue, bursts, and the build. They are read when the metrics render.
 */
import type { BufferRegistry } from "../memory/buffers.ts";
import type { BurstRegistry } from "./burst_registry.ts";
import type { Compilations } from "./compilations.ts";
import { DRIVER_VERSION } from "./devices/registry.ts";
import type { ExecutorPool } from "./executor_pool.ts";
import type { Metrics } from "./metrics.ts";

/** Registers the driver's gauges over its parts. */
export function registerDriverGauges(
  metrics: Metrics,
  parts: {
    threads: number;
    pool: ExecutorPool;
    buffers: BufferRegistry;
    compilations: Compilations;
    bursts: BurstRegistry;
  },
): void {
  const { threads, pool, buffers, compilations, bursts } = parts;
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
  metrics.gauge("nnserve_build_info", "The running build (always 1)", () => 1, {
    driver: DRIVER_VERSION,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
  });
}
