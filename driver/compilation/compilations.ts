/**
 * The compilations of all clients (NNAPI prepared models): preparing them through the
 * compiler and its cache, saving their records atomically against their model's delete,
 * keeping them live in memory, reviving them after a restart, completing a cache hit's
 * weights on first use, and removing them. What else a compilation owns (bursts, executor
 * copies, driver-managed buffers) the driver releases around `remove`.
 */
import type { StateEntry } from "../../store/state_store.ts";
import type {
  BatchingConfig,
  CompilationRecord,
  CompilationStore,
} from "../../store/compilation_store.ts";
import type { ModelRecord } from "../../store/model_store.ts";
import { DriverError, invalid, notFound } from "../../nnapi/errors.ts";
import type { Compiled, Compiler } from "./compiler.ts";
import type { Models } from "../model/models.ts";
import type { Model } from "../model/model.ts";
import { batchFixedAtOne, openBatchExtent } from "../model/batch_extent.ts";
import type { PartitionSummary } from "./partitioner/model_partition.ts";
import type { PreparedModel } from "./plan.ts";

/** A compilation request after boundary validation. */
export interface CompilationRequest {
  model: string;
  preference?: CompilationRecord["preference"];
  priority?: CompilationRecord["priority"];
  devices?: string[];
  deadlineMs?: number;
  /** The 32-byte cache token, when the client wants compilation caching. */
  cacheToken?: Uint8Array;
  /** "profile" times the model on each device at preparation to choose the plan. */
  partitioning?: "static" | "profile";
  /** Dynamic batching of its executions. */
  batching?: BatchingConfig;
}

/** What a created compilation reports. */
export interface CompilationInfo {
  id: string;
  model: string;
  preference: CompilationRecord["preference"];
  priority: CompilationRecord["priority"];
  devices: string[];
  cache: "hit" | "miss" | "none";
  /** Set when a cached entry was unusable (tampered, truncated, ...) and was replaced. */
  cacheRejected?: string;
  prepareMs: number;
  /** Which device runs which operations, with estimated costs. */
  plan?: PartitionSummary;
  batching?: BatchingConfig;
}

/** What `GET /v1/compilations/{id}` reports. */
export interface CompilationDescription {
  id: string;
  model: string;
  preference: CompilationRecord["preference"];
  priority: CompilationRecord["priority"];
  devices: string[];
  createdAt: string;
  plan?: PartitionSummary;
  batching?: BatchingConfig;
}

/** A compilation held in memory: its record, plan, and (once needed) weights. */
export interface LiveCompilation {
  record: CompilationRecord;
  compiled: Compiled;
  /** The complete plan, once its weights are at hand. */
  prepared?: PreparedModel;
}

/** What a listing says of a compilation (no plan). */
function summary(record: CompilationRecord): CompilationDescription {
  const { id, model, preference, priority, devices, createdAt, batching } = record;
  return {
    id,
    model,
    preference,
    priority,
    devices,
    createdAt,
    ...(batching ? { batching } : {}),
  };
}

/** Every live and stored compilation. */
export class Compilations {
  readonly #compiler: Compiler;
  readonly #store: CompilationStore;
  readonly #models: Models;
  readonly #live = new Map<string, LiveCompilation>();

  /** Compilations one client may have (NNSERVE_MAX_COMPILATIONS_PER_CLIENT). */
  readonly #limit: number;

  constructor(
    parts: { compiler: Compiler; store: CompilationStore; models: Models; limit?: number },
  ) {
    this.#compiler = parts.compiler;
    this.#store = parts.store;
    this.#models = parts.models;
    this.#limit = parts.limit ?? Infinity;
  }

  /** Compilations held in memory, for metrics. */
  get size(): number {
    return this.#live.size;
  }

  /** Prepares a model for execution (NNAPI `prepareModel`), through the cache with a token. */
  async create(owner: string, request: CompilationRequest): Promise<CompilationInfo> {
    const started = performance.now();
    const modelRecord = await this.#models.record(owner, request.model);
    const opened = request.batching ? checkBatchable(modelRecord, request.batching) : false;
    const record: CompilationRecord = {
      id: crypto.randomUUID(),
      owner,
      model: request.model,
      preference: request.preference ?? "FAST_SINGLE_ANSWER",
      priority: request.priority ?? "MEDIUM",
      devices: request.devices ?? this.#compiler.devices.list.map((d) => d.info.name),
      ...(request.partitioning === "profile" ? { partitioning: "profile" as const } : {}),
      ...portNames(modelRecord),
      ...(request.batching ? { batching: request.batching } : {}),
      ...(opened ? { batchExtentOpened: true as const } : {}),
      ...(modelRecord.name
        ? { modelName: modelRecord.name, modelVersion: modelRecord.version ?? "1" }
        : {}),
      createdAt: new Date().toISOString(),
    };
    if (request.cacheToken) {
      record.cacheKey = await this.#compiler.cacheKey(
        record,
        modelRecord.checksum,
        request.cacheToken,
      );
    } else {
      record.cacheKey = await this.#compiler.ownCacheKey(record, modelRecord.checksum);
      if (record.cacheKey) record.ownCacheEntry = true;
    }
    const compiled = await this.#compiler.compile(
      record,
      () => this.#load(record, modelRecord),
      record.cacheKey,
      {
        // Epoch ms, counted from the request's start: preparation stops once it passes.
        deadline: request.deadlineMs === undefined
          ? undefined
          : Date.now() - (performance.now() - started) + request.deadlineMs,
        saveOwn: record.ownCacheEntry,
      },
    );
    const prepareMs = performance.now() - started;
    try {
      if (request.deadlineMs !== undefined && prepareMs > request.deadlineMs) {
        throw new DriverError(
          "MISSED_DEADLINE_PERSISTENT",
          `preparation took ${prepareMs.toFixed(1)} ms, over the ${request.deadlineMs} ms deadline`,
        );
      }
      await this.#save(record);
    } catch (error) {
      // Refused (late, a limit, its model deleted meanwhile): its own cache entry goes too.
      if (record.ownCacheEntry) await this.#compiler.dropOwnEntry(record.cacheKey!).catch(() => {});
      throw error;
    }
    this.#live.set(record.id, { record, compiled });
    const { id, preference, priority, devices } = record;
    return {
      id,
      model: record.model,
      preference,
      priority,
      devices,
      cache: compiled.cache,
      ...(compiled.rejected ? { cacheRejected: compiled.rejected } : {}),
      prepareMs,
      ...(compiled.plan.partition ? { plan: compiled.plan.partition } : {}),
      ...(record.batching ? { batching: record.batching } : {}),
    };
  }

  /** A compilation of this client with its plan (prepared again after a restart). */
  async describe(owner: string, id: string): Promise<CompilationDescription> {
    const { record, compiled } = await this.live(owner, id);
    const plan = compiled.plan.partition;
    return { ...summary(record), ...(plan ? { plan } : {}) };
  }

  /**
   * A page of this client's compilations (of one model when given), as recorded: listing
   * prepares nothing, so a listing after a restart has no plans.
   */
  async list(
    owner: string,
    query: { model?: string; limit: number; cursor?: string },
  ): Promise<{ compilations: CompilationDescription[]; next?: string }> {
    const { items, next } = await this.#store.list(owner, query);
    return { compilations: items.map(summary), ...(next ? { next } : {}) };
  }

  /** The client's compilations of a model (found by the model's index, not a scan). */
  async ofModel(owner: string, model: string): Promise<CompilationDescription[]> {
    return (await this.#store.ofModel(owner, model)).map(summary);
  }

  /**
   * Saves a compilation record only if its model still exists, in one atomic step: a model
   * deleted while it was being prepared makes the compilation NOT_FOUND, never an orphan.
   */
  async #save(record: CompilationRecord): Promise<void> {
    for (;;) {
      const model = await this.#models.entry(record.owner, record.model);
      if (!model.value || model.value.deleted) {
        throw notFound(`no model ${record.model}: it was deleted while being prepared`);
      }
      if (await this.#store.save(record, model as StateEntry<ModelRecord>, this.#limit)) return;
    }
  }

  /** The model a compilation prepares: its batch extent open when batching declared it so. */
  async #load(record: CompilationRecord, modelRecord: ModelRecord): Promise<Model> {
    const model = await this.#models.load(modelRecord);
    return record.batchExtentOpened ? openBatchExtent(model) : model;
  }

  /**
   * A compilation of this client, live: at once when it is (executions ask on every run),
   * else prepared again from its record (after a restart, or on another replica).
   */
  live(owner: string, id: string): LiveCompilation | Promise<LiveCompilation> {
    const live = this.#live.get(id);
    if (!live) return this.#revive(owner, id);
    if (live.record.owner !== owner) return Promise.reject(notFound(`no compilation ${id}`));
    return live;
  }

  /** A compilation of this client prepared again (or taken from cache) from its record. */
  async #revive(owner: string, id: string): Promise<LiveCompilation> {
    const stored = await this.#store.get(owner, id);
    if (!stored) throw notFound(`no compilation ${id}`);
    const record = { ...stored, devices: this.#compiler.devices.known(stored.devices) };
    const modelRecord = await this.#models.record(owner, record.model, true);
    const compiled = await this.#compiler.compile(
      record,
      () => this.#load(record, modelRecord),
      record.cacheKey,
    );
    // A delete that landed while this was preparing must not be undone by keeping it live.
    if (!(await this.#store.get(owner, id))) throw notFound(`no compilation ${id}`);
    const revived = this.#live.get(id) ?? { record, compiled };
    this.#live.set(id, revived);
    return revived;
  }

  /**
   * The complete plan of a live compilation: after a cache hit its weights are read on first
   * need; a data cache that no longer matches by then is counted as rejected and the
   * compilation prepared again (which rewrites the cache entry).
   */
  async complete(live: LiveCompilation): Promise<PreparedModel> {
    if (live.prepared) return live.prepared;
    const complete = live.compiled.complete();
    if (complete) {
      live.prepared = complete;
      return complete;
    }
    console.warn(`nnserve: data cache of compilation ${live.record.id} changed; preparing anew`);
    this.#compiler.countRejected();
    const modelRecord = await this.#models.record(live.record.owner, live.record.model, true);
    const loadModel = () => this.#load(live.record, modelRecord);
    // A hit again would read the same broken file: drop the entry, then prepare and save.
    live.compiled = await this.#compiler.compile(live.record, loadModel, live.record.cacheKey, {
      dropCached: true,
    });
    live.prepared ??= live.compiled.complete() ?? undefined;
    if (!live.prepared) throw new DriverError("GENERAL_FAILURE", "the plan could not be rebuilt");
    return live.prepared;
  }

  /**
   * Removes a compilation's record (the one atomic step concurrent deletes race on) and its
   * live state; NOT_FOUND when it is not this client's or another delete took it.
   */
  async remove(owner: string, id: string): Promise<CompilationRecord> {
    const live = this.#live.get(id);
    if (live && live.record.owner !== owner) throw notFound(`no compilation ${id}`);
    const record = await this.#store.remove(owner, id);
    if (!record) throw notFound(`no compilation ${id}`);
    this.#live.delete(id);
    if (record.ownCacheEntry && record.cacheKey) {
      await this.#compiler.dropOwnEntry(record.cacheKey).catch((error: Error) => {
        console.warn(`nnserve: could not drop compilation ${id}'s cache entry: ${error.message}`);
      });
    }
    return record;
  }

  /** Whether a live compilation here is of the client's model `name` at `version`. */
  servesVersion(owner: string, name: string, version: string): boolean {
    for (const { record } of this.#live.values()) {
      if (record.owner === owner && record.modelName === name && record.modelVersion === version) {
        return true;
      }
    }
    return false;
  }

  /** Drops a compilation's live state (another replica deleted it). */
  forget(id: string): void {
    this.#live.delete(id);
  }

  /** Deletes a model; its document stays while compilations of it exist. */
  deleteModel(owner: string, id: string): Promise<ModelRecord | undefined> {
    return this.#models.delete(owner, id, () => this.#store.modelInUse(owner, id));
  }

  /** Removes a model its client deleted once no compilation of it is left. */
  collectModel(owner: string, model: string): Promise<ModelRecord | undefined> {
    return this.#models.collect(owner, model, () => this.#store.modelInUse(owner, model));
  }
}

/**
 * The model's port names, when it has them (imported models), and its ONNX scalar inputs,
 * for the compilation record.
 */
function portNames(
  model: ModelRecord,
): Pick<CompilationRecord, "inputNames" | "outputNames" | "scalarInputs" | "scalarOutputs"> {
  const names = (ports: ModelRecord["inputs"]) =>
    ports.every((p) => p.name !== undefined) ? ports.map((p) => p.name!) : undefined;
  const inputNames = names(model.inputs);
  const outputNames = names(model.outputs);
  const scalars = (ports: { shape: unknown[] }[] | undefined) =>
    ports?.flatMap((p, k) => p.shape.length === 0 ? [k] : []) ?? [];
  const scalarInputs = scalars(model.onnx?.inputs);
  const scalarOutputs = scalars(model.onnx?.outputs);
  return {
    ...(inputNames && model.inputs.length > 0 ? { inputNames } : {}),
    ...(outputNames && model.outputs.length > 0 ? { outputNames } : {}),
    ...(scalarInputs.length > 0 ? { scalarInputs } : {}),
    ...(scalarOutputs.length > 0 ? { scalarOutputs } : {}),
  };
}

/**
 * Refuses batching for a model whose executions cannot be stacked: every input and output
 * needs a first extent that is the batch, left open, or fixed at 1 for all of them (then
 * opened when the model is prepared, `openBatchExtent`, which refuses a model whose rows do
 * not stay apart). Returns whether the batch extent is to be opened.
 */
function checkBatchable(model: ModelRecord, batching: BatchingConfig): boolean {
  const refuse = (why: string) => invalid(`dynamic batching needs ${why}`, { path: ["batching"] });
  const fixedAtOne = batchFixedAtOne(model);
  for (const [kind, ports] of [["input", model.inputs], ["output", model.outputs]] as const) {
    for (const [k, port] of ports.entries()) {
      if (!fixedAtOne && (port.dimensions.length === 0 || port.dimensions[0] !== 0)) {
        const name = port.name ?? `${kind} ${k}`;
        throw refuse(
          `every input's and output's first extent to be the batch: left open (0, or ` +
            `symbolic in ONNX), or 1 for all of them; ${name} is [${port.dimensions}]`,
        );
      }
    }
  }
  if (batching.maxQueueSize !== undefined && batching.maxQueueSize < batching.maxBatchSize) {
    throw refuse(
      `room in the queue for a whole batch: maxQueueSize ${batching.maxQueueSize} is less ` +
        `than maxBatchSize ${batching.maxBatchSize}`,
    );
  }
  const preferred = batching.preferredBatchSizes ?? [];
  const over = preferred.find((n) => n > batching.maxBatchSize);
  if (over !== undefined) {
    throw refuse(
      `preferred batch sizes of at most maxBatchSize (${batching.maxBatchSize}): ${over}`,
    );
  }
  return fixedAtOne;
}
