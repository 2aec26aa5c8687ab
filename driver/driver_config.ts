/**
 * What a driver is made of (its stores, devices, limits and parallelism) and the changes it
 * announces to other replicas.
 */
import type { BlobStore } from "../store/blob_store.ts";
import type { StateStore } from "../store/state_store.ts";
import type { CompilationCache } from "../cache/compilation_cache.ts";
import type { MemoryLimits } from "../memory/pools.ts";
import type { DeviceCosts } from "./devices/device.ts";
import type { DeviceSet } from "./devices/device_list.ts";
import type { QueueLimits } from "./execution/executors/pool.ts";
import type { ModelLimits } from "./model/models.ts";

/**
 * A change that makes what other replicas hold in memory stale (a deleted compilation's
 * prepared plan, the served models of a client, a deleted memory's loaded bytes, the
 * execution series of a named model version removed for good). The driver hands its own to
 * {@link DriverConfig.announce}; the serving layer tells every replica, and hands back what
 * it hears through {@link Driver.heard}.
 */
export type Change =
  | { kind: "compilation-deleted"; owner: string; id: string }
  | { kind: "models-changed"; owner: string }
  | { kind: "memory-deleted"; owner: string; id: string }
  | { kind: "version-removed"; owner: string; name: string; version: string };

/** Default of {@link DriverConfig.maxCompilationsPerClient}. */
export const DEFAULT_MAX_COMPILATIONS_PER_CLIENT = 1000;

/** Where the driver keeps state and how much parallelism it uses. */
export interface DriverConfig {
  kv: StateStore;
  /** This replica's name, in metrics, logs and answers (default: the host name). */
  replica?: string;
  /** Where model documents and weights go (default: `<data dir>/blobs`). */
  blobs?: BlobStore;
  dataDir: string;
  /** The opened compilation cache. */
  cache: CompilationCache;
  /** Executor workers (parallel executions). */
  workers: number;
  /**
   * Kernel threads all executions share (default: one per worker): one execution alone
   * splits its large kernel calls across all of them, concurrent ones share them.
   */
  threads?: number;
  /** Memory pool size limits. */
  memoryLimits?: MemoryLimits;
  /**
   * Plans of at most this many estimated multiply-adds run on the driver's own thread: a
   * worker round trip would cost more than the kernels (default 250 000: tens of µs with
   * the SIMD kernels, about half a millisecond with the reference quantized ones).
   */
  inlineWork?: number;
  /** Bounds of the executions waiting for a worker (NNSERVE_MAX_QUEUED, ..._PER_CLIENT). */
  queueLimits?: QueueLimits;
  /** How large a model may be, and how many one client may have. */
  modelLimits?: Partial<ModelLimits>;
  /** Compilations one client may have (NNSERVE_MAX_COMPILATIONS_PER_CLIENT). */
  maxCompilationsPerClient?: number;
  /** Bursts one client may hold open at once (NNSERVE_MAX_BURSTS_PER_CLIENT). */
  maxBurstsPerClient?: number;
  /**
   * How long, in µs, the service polls for a burst's next request after answering one
   * (NNSERVE_BURST_POLLING_WINDOW; driver/burst/polling_window.ts; 0: never).
   */
  burstPollingWindowUs?: number;
  /** The devices and their measured costs (default: the host devices). */
  devices?: DeviceSet;
  /** Device costs that replace the measured ones (tests that force a partition). */
  deviceCosts?: Record<string, DeviceCosts>;
  /**
   * Told of every change once it is committed (default: nobody). A failure to tell is the
   * announcer's to report: the change itself stands.
   */
  announce?: (change: Change) => Promise<void>;
}

/** Default of {@link DriverConfig.inlineWork}. */
export const DEFAULT_INLINE_WORK = 250_000;
