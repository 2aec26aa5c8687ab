import type { ModelRecord } from "./model_store.ts";
import type { StateEntry, StateKey, StateStore } from "./state_store.ts";
import { listPage, type Page, readMany } from "./kv_pages.ts";
import { countValues, kvCounter, quotaReached } from "./kv_counters.ts";

/**
 * Persistent compilation records (what was asked for, not the plan itself): after a restart
 * a compilation is prepared again from its model on first use, so nothing a client created
 * is lost. An index by model lets a deleted model's document live while compilations need it.
 */

/**
 * Dynamic batching of a compilation's executions (`batching` on `POST /v1/compilations`):
 * what `driver/execution/dynamic_batcher.ts` does with it.
 */
export interface BatchingConfig {
  /** Rows (the inputs' first extent, summed over the executions) of one run at most. */
  maxBatchSize: number;
  /**
   * The sizes runs take (each at most `maxBatchSize`): a batch is padded with zero rows up
   * to the next of them or `maxBatchSize` (default: powers of two).
   */
  preferredBatchSizes?: number[];
  /** How long the oldest queued execution waits for others while an executor is free. */
  maxQueueDelayUs: number;
  /** Executions queued for batching at most; past it RESOURCE_EXHAUSTED_TRANSIENT (429). */
  maxQueueSize?: number;
}

/** A compilation as the client requested it. */
export interface CompilationRecord {
  id: string;
  owner: string;
  model: string;
  preference: "LOW_POWER" | "FAST_SINGLE_ANSWER" | "SUSTAINED_SPEED";
  priority: "LOW" | "MEDIUM" | "HIGH";
  devices: string[];
  createdAt: string;
  /**
   * Compilation cache key: of its cache token, or (replicas sharing the cache, no token)
   * the compilation's own entry, so replicas that take it over load rather than prepare it.
   */
  cacheKey?: string;
  /** The cache entry is the compilation's own (no token): it goes when the compilation does. */
  ownCacheEntry?: true;
  /** How the plan's costs were obtained: static estimates (default) or profiling. */
  partitioning?: "static" | "profile";
  /** The model's input and output names (imported models), for arguments by name. */
  inputNames?: string[];
  outputNames?: string[];
  /**
   * Positions of inputs that are ONNX scalars (rank 0), carried as [1]: an execution may
   * give them `dimensions: []`, as onnxruntime takes them.
   */
  scalarInputs?: number[];
  /** Positions of outputs that are ONNX scalars, carried as [1]: answered with shape []. */
  scalarOutputs?: number[];
  /** Dynamic batching of its executions, when asked for. */
  batching?: BatchingConfig;
  /**
   * The model's batch extent is fixed at 1 and batching declared it open: the plan runs the
   * model with it open (driver/model/batch_extent.ts), which the cache key says.
   */
  batchExtentOpened?: true;
  /** Its model's name and version (named models): what its metrics are labelled by. */
  modelName?: string;
  modelVersion?: string;
}

/** Compilation records of all clients. */
export class CompilationStore {
  readonly #kv: StateStore;

  constructor(kv: StateStore) {
    this.#kv = kv;
  }

  /**
   * Saves the record and its by-model index entry, in one atomic step with a check that the
   * model's record is still `model` (read after preparing, not deleted). The model's record
   * is rewritten as it is, which changes its versionstamp: a model delete that looked for
   * compilations before this commit then fails its own check and looks again. False when the
   * model changed meanwhile.
   */
  async save(
    record: CompilationRecord,
    model: StateEntry<ModelRecord>,
    limit = Infinity,
  ): Promise<boolean> {
    const count = await this.#count(record.owner);
    if (count.value >= limit) {
      throw quotaReached("compilations", limit, "NNSERVE_MAX_COMPILATIONS_PER_CLIENT");
    }
    const { ok } = await this.#kv.atomic()
      .check(model, count)
      .set(model.key, model.value)
      .set(["compilation", record.owner, record.id], record)
      .set(["model_compilation", record.owner, record.model, record.id], true)
      .set(count.key, count.value + 1)
      .commit();
    return ok;
  }

  /** The client's count of compilations (`kv_counters.ts`). */
  #count(owner: string): Promise<StateEntry<number>> {
    return kvCounter(
      this.#kv,
      ["compilation_count", owner],
      () => countValues(this.#kv, ["compilation", owner]),
    );
  }

  /** A page of this client's compilations, of one model when given. */
  list(
    owner: string,
    query: { model?: string; limit: number; cursor?: string },
  ): Promise<Page<CompilationRecord>> {
    const { model, limit, cursor } = query;
    return listPage<CompilationRecord>(this.#kv, ["compilation", owner], {
      keep: (r) => model === undefined || r.model === model,
      limit,
      cursor,
    });
  }

  /** The record, or null. */
  async get(owner: string, id: string): Promise<CompilationRecord | null> {
    return (await this.#kv.get<CompilationRecord>(["compilation", owner, id])).value;
  }

  /** Deletes the record and its index entry; null when absent (another delete took it first). */
  async remove(owner: string, id: string): Promise<CompilationRecord | null> {
    for (;;) {
      const entry = await this.#kv.get<CompilationRecord>(["compilation", owner, id]);
      if (!entry.value) return null;
      const count = await this.#count(owner);
      const { ok } = await this.#kv.atomic()
        .check(entry, count)
        .delete(entry.key)
        .delete(["model_compilation", owner, entry.value.model, id])
        .set(count.key, Math.max(0, count.value - 1))
        .commit();
      if (ok) return entry.value;
    }
  }

  /** The client's compilations of a model, found by the model's index. */
  async ofModel(owner: string, model: string): Promise<CompilationRecord[]> {
    const keys: StateKey[] = [];
    for await (const entry of this.#kv.list({ prefix: ["model_compilation", owner, model] })) {
      keys.push(["compilation", owner, String(entry.key[3])]);
    }
    return readMany<CompilationRecord>(this.#kv, keys);
  }

  /** Whether any compilation of the client still references the model. */
  async modelInUse(owner: string, model: string): Promise<boolean> {
    for await (const _ of this.#kv.list({ prefix: ["model_compilation", owner, model] })) {
      return true;
    }
    return false;
  }
}
