/**
 * The NNAPI driver: registers models, prepares compilations (through the compilation
 * cache), runs executions on its devices, and manages memory pools, driver-managed buffers
 * and bursts, for clients (owners). It knows nothing of HTTP or ONNX (the serving layer,
 * `serving/`, adds those); every failure is a DriverError with an NNAPI status.
 */
import { DriverError } from "../nnapi/errors.ts";
import { DirectoryBlobStore } from "../store/blob_store.ts";
import type { StateStore } from "../store/state_store.ts";
import { BufferRegistry } from "../memory/buffers.ts";
import { checkRegion, type MemoryInfo, MemoryPools } from "../memory/pools.ts";
import { SharedRegions } from "../memory/regions.ts";
import { CompilationStore } from "../store/compilation_store.ts";
import { ModelStore } from "../store/model_store.ts";
import { OpenBursts } from "./burst/open_bursts.ts";
import {
  DEFAULT_BURST_POLLING_WINDOW_US,
  PollingWindow,
  type RequestPolling,
} from "./burst/polling_window.ts";
import {
  countBurstPolling,
  countRefusal,
  countSplitCalls,
  registerDriverMetrics,
} from "./driver_metrics.ts";
import {
  type ModelStatistics,
  modelStatistics,
  versionLabels,
} from "./execution/execution_metrics.ts";
import type { ModelRecord } from "../store/model_store.ts";
import {
  type CompilationDescription,
  type CompilationInfo,
  type CompilationRequest,
  Compilations,
} from "./compilation/compilations.ts";
import { Compiler } from "./compilation/compiler.ts";
import type { DeviceInfo } from "./devices/device.ts";
import { DeviceSet } from "./devices/device_list.ts";
import { type ClientExecutionRequest, type ExecutionResult } from "./execution/request.ts";
import { ExecutionRunner } from "./execution/runner.ts";
import { ExecutorPool } from "./execution/executors/pool.ts";
import {
  type BufferRequest,
  copyIntoBuffer,
  copyOutOfBuffer,
  describeBuffer,
} from "./execution/memory_domain.ts";
import { Metrics } from "../metrics/metrics.ts";
import {
  type Change,
  DEFAULT_INLINE_WORK,
  DEFAULT_MAX_COMPILATIONS_PER_CLIENT,
  type DriverConfig,
} from "./driver_config.ts";
import type { ModelJson } from "./model/model_schema.ts";
import { type ModelInfo, Models, type ModelSource, publicModel } from "./model/models.ts";

/** How long one probe of the state store waits for it (a balancer's check allows a second). */
const STATE_PROBE_MS = 500;

/** How long a probe's answer is kept: probes every second are enough for a balancer. */
const STATE_PROBE_MAX_AGE_MS = 1000;

/** The driver: one per server process. */
export class Driver {
  /** Counters of what the driver did, for `GET /metrics`. */
  readonly metrics = new Metrics();
  /** This replica's name (NNSERVE_REPLICA, else the host name). */
  readonly replica: string;
  /** Named spans of memories (the Open Inference Protocol's shared-memory regions). */
  readonly regions: SharedRegions;
  readonly #models: Models;
  readonly #compiler: Compiler;
  readonly #pool: ExecutorPool;
  readonly #memories: MemoryPools;
  readonly #buffers = new BufferRegistry();
  readonly #compilations: Compilations;
  readonly #bursts: OpenBursts;
  /** Polling for bursts' next requests, while no executor runs anything. */
  readonly #polling: PollingWindow;
  readonly #runner: ExecutionRunner;
  /** Where changes go once committed. */
  readonly #announce: (change: Change) => Promise<void>;
  /** Where the records live. */
  readonly #state: StateStore;
  /** The latest probe of the state store, kept for {@link STATE_PROBE_MAX_AGE_MS}. */
  #stateProbe?: { at: number; reachable: Promise<boolean> };

  constructor(config: DriverConfig) {
    const blobs = config.blobs ?? new DirectoryBlobStore(`${config.dataDir}/blobs`);
    this.#memories = new MemoryPools(config.kv, config.dataDir, {
      limits: config.memoryLimits,
      blobs,
    });
    this.regions = new SharedRegions(config.kv, this.#memories);
    this.replica = config.replica ?? Deno.hostname();
    this.#polling = new PollingWindow(
      config.burstPollingWindowUs ?? DEFAULT_BURST_POLLING_WINDOW_US,
      {
        idle: () => this.#pool.running === 0,
        spent: (seconds) => countBurstPolling(this.metrics, seconds),
      },
    );
    this.#bursts = new OpenBursts({
      execute: (o, c, request) => this.execute(o, c, request),
      memory: (o, id) => this.#memories.hold(o, id),
      countRefusal: (error) => this.countRefusal(error),
      polling: this.#polling,
    }, config.maxBurstsPerClient);
    this.#models = new Models(
      new ModelStore(config.kv, config.dataDir, blobs),
      this.#memories,
      config.modelLimits,
    );
    const { list, costs } = config.devices ?? DeviceSet.host();
    const measured = new Map([...costs, ...Object.entries(config.deviceCosts ?? {})]);
    this.#compiler = new Compiler(new DeviceSet(list, measured), {
      profiler: async (plan, inputs) => {
        const id = `profile-${crypto.randomUUID()}`;
        try {
          // Profiling is the service's own work, not queued against the client's share.
          const run = await this.#pool.run(id, plan, inputs, {
            client: "",
            priority: "LOW",
            perOperation: true,
          });
          return run.steps;
        } finally {
          this.#pool.unload(id);
        }
      },
      unitPreparer: async (id, plan) => {
        // The service's own work, as profiling; the executor keeps what it prepared for the
        // compilation's runs unless something failed (the plan then changes).
        try {
          const run = await this.#pool.run(id, plan, [], {
            client: "",
            priority: plan.options.priority,
            prepareOnly: true,
          });
          if (run.steps.length > 0) this.#pool.unload(id);
          return { failed: run.steps, artifacts: run.artifacts ?? [] };
        } catch (error) {
          // Executors too busy to take it now: the units are prepared at their first runs
          // (one that fails there runs on the reference kernels), not the compilation refused.
          if (error instanceof DriverError && error.status === "RESOURCE_EXHAUSTED_TRANSIENT") {
            return { failed: [], artifacts: [] };
          }
          throw error;
        }
      },
      cache: config.cache,
      metrics: this.metrics,
    });
    this.#compilations = new Compilations({
      compiler: this.#compiler,
      store: new CompilationStore(config.kv),
      models: this.#models,
      limit: config.maxCompilationsPerClient ?? DEFAULT_MAX_COMPILATIONS_PER_CLIENT,
    });
    const threads = config.threads ?? config.workers;
    this.#pool = new ExecutorPool(
      config.workers,
      threads,
      (calls) => countSplitCalls(this.metrics, calls),
      config.queueLimits,
    );
    this.#runner = new ExecutionRunner({
      compilations: this.#compilations,
      pool: this.#pool,
      memories: this.#memories,
      buffers: this.#buffers,
      metrics: this.metrics,
      inlineWork: config.inlineWork ?? DEFAULT_INLINE_WORK,
    });
    this.#announce = config.announce ?? (() => Promise.resolve());
    this.#state = config.kv;
    registerDriverMetrics(this.metrics, {
      threads,
      pool: this.#pool,
      buffers: this.#buffers,
      memories: this.#memories,
      compilations: this.#compilations,
      runner: this.#runner,
      bursts: this.#bursts,
      replica: this.replica,
    });
  }

  /**
   * What readiness reports of the driver: whether the state store answers (probed at most
   * once per {@link STATE_PROBE_MAX_AGE_MS}, each probe waiting at most
   * {@link STATE_PROBE_MS}, so a probe never hangs on a database that does not answer), and
   * how many compilations this process holds prepared (which run without the state store).
   */
  async condition(): Promise<{ stateReachable: boolean; liveCompilations: number }> {
    const now = performance.now();
    if (!this.#stateProbe || now - this.#stateProbe.at > STATE_PROBE_MAX_AGE_MS) {
      this.#stateProbe = { at: now, reachable: this.#state.available(STATE_PROBE_MS) };
    }
    return {
      stateReachable: await this.#stateProbe.reachable,
      liveCompilations: this.#compilations.size,
    };
  }

  /** A named model version's execution statistics, from the metrics' series. */
  modelStatistics(client: string, model: { name: string; version: string }): ModelStatistics {
    return modelStatistics(this.metrics, { client, model: model.name, version: model.version });
  }

  /** Counts a refusal by one of the service's limits (callers: where errors leave). */
  countRefusal(error: unknown): void {
    countRefusal(this.metrics, error);
  }

  /** Stops the executor workers and the burst polling. */
  async close(): Promise<void> {
    this.#pool.close();
    await this.#polling.close();
  }

  /** A change announced by a replica (this one included): drops what it made stale. */
  heard(change: Change): void {
    if (change.kind === "compilation-deleted") this.#dropCompilation(change.id);
    if (change.kind === "memory-deleted") this.#memories.forgetDeleted(change.owner, change.id);
    if (change.kind === "version-removed") {
      // Its executions' series (its last compilation went before it), unless this process
      // still runs a compilation of that name and version: a client that rolls versions does
      // not grow /metrics without end.
      const { owner, name, version } = change;
      if (!this.#compilations.servesVersion(owner, name, version)) {
        this.metrics.forget(versionLabels(owner, name, version));
      }
    }
  }

  /** Drops what this process holds of a deleted compilation; nothing when it holds none. */
  #dropCompilation(id: string): void {
    this.#compilations.forget(id);
    this.#bursts.closeForCompilation(id);
    this.#pool.unload(id);
    this.#buffers.deleteForCompilation(id);
    // The series of a compilation of a model without a name (a named version's go when its
    // model is removed: version-removed).
    this.metrics.forget({ model: id, version: "" });
  }

  /** Tells every replica that a named model version is gone, if `record`'s removal did it. */
  async #removed(owner: string, record: ModelRecord | undefined): Promise<void> {
    const gone = await this.#models.versionGone(owner, record);
    if (gone) await this.#announce({ kind: "version-removed", owner, ...gone });
  }

  /** Descriptions of every device. */
  deviceInfos(): DeviceInfo[] {
    return this.#compiler.devices.list.map((d) => d.info);
  }

  /**
   * Validates and stores a model (with a name and version when given, and the ONNX file's
   * ports for an import); its public metadata.
   */
  async registerModel(
    owner: string,
    json: ModelJson,
    source: ModelSource = {},
  ): Promise<ModelInfo> {
    const record = await this.#changing(owner, this.#models.register(owner, json, source));
    this.metrics.count("nnserve_models_registered_total", "Models registered");
    return publicModel(record);
  }

  /** Public metadata of a model of this client. */
  async getModel(owner: string, id: string): Promise<ModelInfo> {
    return publicModel(await this.#models.record(owner, id));
  }

  /** A page of this client's models, by name and version when given. */
  listModels(
    owner: string,
    query: { name?: string; version?: string; limit: number; cursor?: string },
  ): Promise<{ models: ModelInfo[]; next?: string }> {
    return this.#models.list(owner, query);
  }

  /** The client's models named `name`, every version (found by the name index). */
  namedModels(owner: string, name: string): Promise<ModelInfo[]> {
    return this.#models.named(owner, name);
  }

  /** The client's compilations of one model (found by the model's index). */
  compilationsOfModel(owner: string, model: string): Promise<CompilationDescription[]> {
    return this.#compilations.ofModel(owner, model);
  }

  /** A page of this client's compilations, of one model when given. */
  listCompilations(
    owner: string,
    query: { model?: string; limit: number; cursor?: string },
  ): Promise<{ compilations: CompilationDescription[]; next?: string }> {
    return this.#compilations.list(owner, query);
  }

  /** A model of this client as the JSON that registers it (an import's converted model). */
  async modelJson(owner: string, id: string): Promise<ModelJson> {
    return this.#models.wireModel(await this.#models.record(owner, id));
  }

  /** Deletes a model; its document stays while compilations of it exist. */
  async deleteModel(owner: string, id: string): Promise<void> {
    await this.#removed(
      owner,
      await this.#changing(owner, this.#compilations.deleteModel(owner, id)),
    );
  }

  /** Per device, whether it supports each operation of the model (model order). */
  async supportedOperations(
    owner: string,
    id: string,
    deviceNames?: string[],
  ): Promise<{ name: string; supported: boolean[] }[]> {
    const devices = this.#compiler.devices.select(deviceNames);
    const model = await this.#models.load(await this.#models.record(owner, id));
    return devices.map((d) => ({ name: d.info.name, supported: d.supportedOperations(model) }));
  }

  /** Prepares a model for execution (NNAPI `prepareModel`), through the cache with a token. */
  createCompilation(owner: string, request: CompilationRequest): Promise<CompilationInfo> {
    return this.#changing(owner, this.#compilations.create(owner, request));
  }

  /** A compilation of this client with its plan (prepared again after a restart). */
  describeCompilation(owner: string, id: string): Promise<CompilationDescription> {
    return this.#compilations.describe(owner, id);
  }

  /**
   * Deletes a compilation, and its model's document if the model was deleted meanwhile. It
   * needs only the record, never the model, so a compilation can always be deleted.
   */
  async deleteCompilation(owner: string, id: string): Promise<void> {
    const record = await this.#changing(owner, this.#compilations.remove(owner, id));
    this.#dropCompilation(id);
    await this.#announce({ kind: "compilation-deleted", owner, id });
    await this.#removed(
      owner,
      await this.#changing(owner, this.#compilations.collectModel(owner, record.model)),
    );
  }

  /** Waits for a change to the client's models or compilations, then announces it. */
  async #changing<T>(owner: string, change: Promise<T>): Promise<T> {
    try {
      return await change;
    } finally {
      await this.#announce({ kind: "models-changed", owner });
    }
  }

  /** Checks that the client has this compilation (before a burst starts on it). */
  async checkCompilation(owner: string, id: string): Promise<void> {
    await this.#compilations.live(owner, id);
  }

  /** Polling for the next request of a stream after an answer (bursts, gRPC streams). */
  get polling(): RequestPolling {
    return this.#polling;
  }

  /** Open bursts and the places clients hold (routes reserve, open and end them). */
  get bursts(): OpenBursts {
    return this.#bursts;
  }

  /** Runs one synchronous execution (NNAPI `executeSynchronously`), counted by outcome. */
  execute(
    owner: string,
    id: string,
    request: ClientExecutionRequest,
  ): Promise<ExecutionResult> {
    return this.#runner.run(owner, id, this.#compilations.live(owner, id), request);
  }

  /** Creates a memory pool from bytes or zero-filled (NNAPI `ANeuralNetworksMemory`). */
  createMemory(owner: string, content: Uint8Array | { size: number }): Promise<MemoryInfo> {
    return this.#memories.create(owner, content);
  }

  /** Reads `[start, end)` of a memory (the whole memory by default). */
  async readMemory(
    owner: string,
    id: string,
    range?: { start: number; end: number },
  ): Promise<{ size: number; bytes: Uint8Array }> {
    const pool = await this.#memories.get(owner, id);
    const start = range?.start ?? 0;
    const end = range?.end ?? pool.size;
    checkRegion(pool.size, start, end - start, `memory ${id}`);
    return { size: pool.size, bytes: pool.bytes.slice(start, end) };
  }

  /** Writes bytes into a memory at `offset`. */
  writeMemory(owner: string, id: string, offset: number, bytes: Uint8Array): Promise<void> {
    return this.#memories.write(owner, id, offset, bytes);
  }

  /**
   * Removes what crashed writes left in the stores: memory blobs no record names (replicas
   * sharing state); the number removed.
   */
  sweepOrphans(): Promise<number> {
    return this.#memories.sweepOrphans();
  }

  /** Deletes a memory; registered models keep their copies of its constants. */
  async deleteMemory(owner: string, id: string): Promise<void> {
    await this.#memories.delete(owner, id);
    await this.#announce({ kind: "memory-deleted", owner, id });
  }

  /** Allocates a driver-managed buffer for roles of a compilation (NNAPI `allocate`). */
  async allocateBuffer(
    owner: string,
    compilation: string,
    request: BufferRequest,
  ): Promise<{ token: string; dimensions: number[] }> {
    const { compiled } = await this.#compilations.live(owner, compilation);
    const buffer = this.#buffers.allocate(
      owner,
      compilation,
      describeBuffer(compiled.plan, request),
    );
    return { token: buffer.token, dimensions: [...buffer.dimensions] };
  }

  /** Fills a fully shaped buffer from a memory of exactly its size (`IBuffer::copyFrom`). */
  async copyMemoryToBuffer(owner: string, token: string, memory: string): Promise<void> {
    const buffer = this.#buffers.get(owner, token);
    copyIntoBuffer(this.#buffers, buffer, await this.#memories.get(owner, memory));
  }

  /** Copies a buffer's contents into a memory of exactly their size (`IBuffer::copyTo`). */
  async copyBufferToMemory(owner: string, token: string, memory: string): Promise<void> {
    const buffer = this.#buffers.get(owner, token);
    const pool = await this.#memories.get(owner, memory);
    const release = copyOutOfBuffer(this.#buffers, buffer, pool);
    try {
      await this.#memories.persist(pool, 0, pool.size);
    } finally {
      release();
    }
  }

  /** Frees a driver-managed buffer. */
  deleteBuffer(owner: string, token: string): void {
    this.#buffers.delete(owner, token);
  }
}
