/**
 * Preparation of compilations, with NNAPI compilation caching: with a cache token the
 * prepared plan is taken from the cache when its files are exactly what this service wrote
 * ("hit"), or prepared from scratch and written there ("miss", also after a rejected,
 * tampered entry); without a token it is prepared and not cached ("none").
 */
import type { CompilationCache } from "../../cache/compilation_cache.ts";
import type { CompilationRecord } from "../../store/compilation_store.ts";
import type { Device } from "../devices/device.ts";
import { type DeviceSet, FALLBACK_DEVICE } from "../devices/device_list.ts";
import { type ModelPartition, partitionModel } from "./partitioner/model_partition.ts";
import { type PlanProfiler, profileModel } from "./partitioner/profile.ts";
import { DriverError } from "../../nnapi/errors.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import type { Model } from "../model/model.ts";
import { attachWeights, decodePlan, encodePlan, sharedBytes } from "./plan_codec.ts";
import {
  type PlanWithoutWeights,
  type PreparedModel,
  runsOnHost,
  type StepTiming,
  type UnitArtifact,
} from "./plan.ts";
import { checkPreparationDeadline, prepareModelAsync } from "./prepare.ts";

const CACHE_RESULTS = ["hit", "miss", "none", "rejected"] as const;
type CacheResult = typeof CACHE_RESULTS[number];
const CACHE_LOOKUPS = [
  "nnserve_compilation_cache_total",
  "Compilation cache lookups: hit, miss, rejected (tampered or broken entries), none",
] as const;

/** How a compilation's plan was obtained. */
export interface Compiled {
  plan: PlanWithoutWeights;
  /**
   * The complete plan. After preparation it is at hand; after a cache hit the weights are
   * read from the data cache on first need (as a driver's mmap of its cache would), and
   * null means that file no longer matches: prepare again.
   */
  complete(): PreparedModel | null;
  cache: "hit" | "miss" | "none";
  /** Why a cache entry was found unusable and replaced. */
  rejected?: string;
}

function prepared(plan: PreparedModel, cache: "miss" | "none"): Compiled {
  return { plan, complete: () => plan, cache };
}

/**
 * Partitioning scheme, part of the cache key. With it, the model, the preference and each
 * allowed device's name and version select the entry, so a hit stays cheap (nothing is
 * prepared to compute the key). Measured speeds are not in the key: each process measures
 * its own at start, and they vary by several times between processes on one machine, so
 * replicas keyed on them would miss each other's entries. An entry keeps the partition
 * chosen when it was made, which is valid on every replica with the same devices.
 */
const PARTITIONING = "static-cost";

/**
 * Prepares the device units of compilation `id`'s plan where its runs will go, and answers
 * the units that could not be prepared (timing entries naming their operations and why)
 * and what the others left for later preparations (kept with the plan, and in the cache).
 */
export type UnitPreparer = (
  id: string,
  plan: PreparedModel,
) => Promise<{ failed: StepTiming[]; artifacts: UnitArtifact[] }>;

/** Prepares plans on the driver's devices, through the compilation cache when asked. */
export class Compiler {
  readonly devices: DeviceSet;
  readonly #cache: CompilationCache;
  readonly #metrics: Metrics;

  readonly #profiler: PlanProfiler | undefined;
  readonly #unitPreparer: UnitPreparer | undefined;

  constructor(
    devices: DeviceSet,
    options: {
      cache: CompilationCache;
      metrics: Metrics;
      /** Runs probe plans in an executor, for profile-guided partitioning. */
      profiler?: PlanProfiler;
      /**
       * Prepares a plan's device units in an executor (sessions, pipelines: off the event
       * loop, kept there for the compilation `id`'s runs); answers those that failed.
       */
      unitPreparer?: UnitPreparer;
    },
  ) {
    this.devices = devices;
    this.#profiler = options.profiler;
    this.#unitPreparer = options.unitPreparer;
    this.#cache = options.cache;
    this.#metrics = options.metrics;
    this.#metrics.declare(...CACHE_LOOKUPS, CACHE_RESULTS.map((result) => ({ result })));
  }

  /** The cache key of a compilation request (client, token, model, options, devices). */
  cacheKey(record: CompilationRecord, modelChecksum: string, token: Uint8Array): Promise<string> {
    return this.#cache.key({
      owner: record.owner,
      token: token.toHex(),
      model: modelChecksum,
      preference: record.preference,
      priority: record.priority,
      devices: this.devices.select(record.devices).map((d) => `${d.info.name}@${d.info.version}`),
      partitioning: record.partitioning === "profile" ? "profile" : PARTITIONING,
      ...(record.batchExtentOpened ? { batchExtent: "opened" } : {}),
    });
  }

  /**
   * Validates support on the selected devices and builds the plan (the cold path), letting
   * other requests run meanwhile and failing with MISSED_DEADLINE_PERSISTENT once `deadline`
   * (epoch ms) has passed.
   */
  async prepare(
    model: Model,
    record: CompilationRecord,
    deadline?: number,
  ): Promise<PreparedModel> {
    const devices = this.devices.select(record.devices);
    const options = { preference: record.preference, priority: record.priority };
    const prepareFor = (placement: string[]) =>
      prepareModelAsync(model, options, { deadline, placement });
    // A model with control flow is partitioned by estimates: sample inputs could send a loop
    // anywhere, and IF and WHILE run on the one device that has them anyway.
    const profiler = record.partitioning === "profile" && model.referenced.length === 0
      ? this.#profiler
      : undefined;
    const measured = profiler
      ? await profileModel(model, devices, {
        costs: this.devices.costs,
        prepare: prepareFor,
        profiler,
      })
      : undefined;
    let partitioned = partitionModel(model, devices, { costs: this.devices.costs, measured });
    for (;;) {
      const prepared = await prepareFor(partitioned.placement);
      prepared.partition = partitioned.summary;
      const units = runsOnHost(prepared)
        ? undefined
        : await this.#unitPreparer?.(record.id, prepared);
      if (!units || units.failed.length === 0) {
        if (units && units.artifacts.length > 0) {
          prepared.unitArtifacts = units.artifacts.map((a) => ({
            step: a.step,
            bytes: sharedBytes(a.bytes),
          }));
        }
        return prepared;
      }
      partitioned = this.#fallBack(devices, partitioned, units.failed[0]);
    }
  }

  /**
   * The partition with the step a device failed to prepare moved to the reference CPU
   * (NNAPI's CPU fallback), which the plan then says.
   */
  #fallBack(
    devices: readonly Device[],
    partitioned: ModelPartition,
    failed: StepTiming,
  ): ModelPartition {
    const fallback = FALLBACK_DEVICE.info.name;
    const reason = failed.fallback ?? `${failed.device} failed to prepare it`;
    if (!devices.some((d) => d.info.name === fallback)) {
      throw new DriverError("DEVICE_UNAVAILABLE", `${reason}; no other allowed device`);
    }
    console.warn(`nnserve: ${reason}; ${fallback} runs it instead`);
    const s = partitioned.summary.steps.findIndex((step) =>
      step.operations.includes(failed.operations[0])
    );
    return partitioned.fallBack(s, fallback, reason);
  }

  /**
   * Prepares a compilation; with a cache key, from the cache when possible. A cache problem
   * is never an error: it is logged, counted, and the plan prepared from scratch. A miss
   * prepares holding the key's lock (`CompilationCache.exclusive`) and looks again first:
   * of replicas (or requests) preparing one key at once, one prepares and the others hit. With a
   * `deadline` (epoch ms), preparation stops with MISSED_DEADLINE_PERSISTENT at its first
   * step after the deadline (after loading the model, between operations, before caching).
   */
  async compile(
    record: CompilationRecord,
    loadModel: () => Promise<Model>,
    cacheKey: string | undefined,
    options: {
      dropCached?: boolean;
      deadline?: number;
      /**
       * The compilation's own entry being made (no token, a shared cache): nothing to look
       * up, the plan is saved for the replicas that take the compilation over; "none".
       */
      saveOwn?: boolean;
    } = {},
  ): Promise<Compiled> {
    const { deadline } = options;
    const load = async () => {
      const model = await loadModel();
      checkPreparationDeadline(deadline, "after loading the model");
      return model;
    };
    if (!cacheKey) {
      this.#count("none");
      return prepared(await this.prepare(await load(), record, deadline), "none");
    }
    if (options.saveOwn) {
      const plan = await this.prepare(await load(), record, deadline);
      checkPreparationDeadline(deadline, "before writing the compilation cache");
      const { model, data } = encodePlan(plan);
      await this.#cache.save(cacheKey, model, data);
      this.#count("none");
      return prepared(plan, "none");
    }
    if (options.dropCached) await this.#cache.delete(cacheKey);
    const first = await this.#lookup(cacheKey);
    if ("cache" in first) return first;
    // One preparation per key across replicas: the others wait for the lock, then hit.
    return await this.#cache.exclusive(cacheKey, async () => {
      const again = await this.#lookup(cacheKey);
      if ("cache" in again) return again;
      const rejected = first.rejected ?? again.rejected;
      const plan = await this.prepare(await load(), record, deadline);
      checkPreparationDeadline(deadline, "before writing the compilation cache");
      const { model, data } = encodePlan(plan);
      await this.#cache.save(cacheKey, model, data);
      this.#count("miss");
      return { ...prepared(plan, "miss"), ...(rejected ? { rejected } : {}) };
    });
  }

  /**
   * Looks a key up: a hit's plan, or why there is none to use (a rejection is logged,
   * counted and its entry dropped here).
   */
  async #lookup(cacheKey: string): Promise<Compiled | { rejected?: string }> {
    const lookup = await this.#cache.load(cacheKey);
    let rejected: string | undefined;
    if (lookup.kind === "hit") {
      try {
        const decoded = decodePlan(lookup.model);
        if (decoded.weightBytes !== lookup.data.size) throw new Error("data cache size differs");
        this.#count("hit");
        const data = lookup.data;
        return {
          plan: decoded.plan,
          complete() {
            const bytes = data.read();
            return bytes ? attachWeights(decoded, bytes) : null;
          },
          cache: "hit",
        };
      } catch (error) {
        rejected = `model cache is malformed: ${(error as Error).message}`;
        await this.#cache.delete(cacheKey);
      }
    } else if (lookup.kind === "rejected") {
      rejected = lookup.reason;
    }
    if (!rejected) return {};
    console.warn(`nnserve: compilation cache entry rejected (${rejected}); preparing anew`);
    this.#count("rejected");
    return { rejected };
  }

  /**
   * The key of a compilation's own cache entry, on a cache replicas share (undefined
   * otherwise): its id stands in for a token, so no request ever selects it.
   */
  async ownCacheKey(record: CompilationRecord, modelChecksum: string): Promise<string | undefined> {
    if (!this.#cache.shared) return undefined;
    return await this.cacheKey(record, modelChecksum, new TextEncoder().encode(`own:${record.id}`));
  }

  /** Drops a compilation's own cache entry (the compilation was deleted). */
  dropOwnEntry(key: string): Promise<void> {
    return this.#cache.delete(key);
  }

  /** Counts a data cache found broken when its weights were finally read. */
  countRejected(): void {
    this.#count("rejected");
  }

  #count(result: CacheResult): void {
    this.#metrics.count(...CACHE_LOOKUPS, { result });
  }
}
