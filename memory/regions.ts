/**
 * Named shared-memory regions (the Open Inference Protocol's system shared-memory
 * extension) over memory pools: a region is a span of one of the client's memories, so no
 * host shared memory is needed across the network. Regions are kept in KV per client and
 * survive restarts; a region whose memory was deleted answers NOT_FOUND when used.
 */
import type { StateEntry, StateKey, StateStore } from "../store/state_store.ts";
import { DriverError, invalid, notFound } from "../nnapi/errors.ts";
import { countValues, kvCounter } from "../store/kv_counters.ts";
import { checkRegion, type MemoryPools } from "./pools.ts";

/** A registered region: `byteSize` bytes of memory `memory` from `offset`. */
export interface SharedRegion {
  name: string;
  memory: string;
  offset: number;
  byteSize: number;
}

/** Regions one client may register, so KV cannot be filled through this door. */
export const MAX_REGIONS_PER_CLIENT = 1000;

const regionKey = (owner: string, name: string): StateKey => ["shared_region", owner, name];
const countKey = (owner: string): StateKey => ["shared_region_count", owner];

/** Every client's registered regions. */
export class SharedRegions {
  readonly #kv: StateStore;
  readonly #memories: MemoryPools;

  constructor(kv: StateStore, memories: MemoryPools) {
    this.#kv = kv;
    this.#memories = memories;
  }

  /**
   * Registers (or, as the protocol allows only once, refuses to re-register) a region over a
   * span of the client's memory.
   */
  async register(owner: string, region: SharedRegion): Promise<void> {
    if (!/^[\w.-]{1,200}$/.test(region.name)) {
      throw invalid("a region name is 1-200 letters, digits, '_', '.' or '-'");
    }
    const pool = await this.#memories.get(owner, region.memory);
    checkRegion(pool.size, region.offset, region.byteSize, `memory ${region.memory}`);
    const key = regionKey(owner, region.name);
    for (;;) {
      const count = await this.#count(owner);
      if (count.value >= MAX_REGIONS_PER_CLIENT) {
        throw new DriverError(
          "RESOURCE_EXHAUSTED_PERSISTENT",
          `this client has ${count.value} shared memory regions, the most it may register`,
        );
      }
      if ((await this.#kv.get(key)).versionstamp !== null) {
        throw invalid(`shared memory region '${region.name}' is already registered`);
      }
      const { ok } = await this.#kv.atomic()
        .check(count, { key, versionstamp: null })
        .set(key, region)
        .set(count.key, count.value + 1)
        .commit();
      if (ok) return;
    }
  }

  /** The client's count of regions (`kv_counters.ts`). */
  #count(owner: string): Promise<StateEntry<number>> {
    return kvCounter(
      this.#kv,
      countKey(owner),
      () => countValues(this.#kv, ["shared_region", owner]),
    );
  }

  /** One region; NOT_FOUND when the client has none of that name. */
  async get(owner: string, name: string): Promise<SharedRegion> {
    const region = (await this.#kv.get<SharedRegion>(regionKey(owner, name))).value;
    if (!region) throw notFound(`no shared memory region '${name}'`);
    return region;
  }

  /** The client's regions, by name. */
  async list(owner: string): Promise<SharedRegion[]> {
    const regions: SharedRegion[] = [];
    for await (const entry of this.#kv.list<SharedRegion>({ prefix: ["shared_region", owner] })) {
      regions.push(entry.value);
    }
    return regions;
  }

  /** Unregisters one region (NOT_FOUND when absent), or all of the client's. */
  async unregister(owner: string, name?: string): Promise<void> {
    const names = name === undefined ? (await this.list(owner)).map((r) => r.name) : [name];
    for (const one of names) {
      for (;;) {
        const entry = await this.#kv.get<SharedRegion>(regionKey(owner, one));
        if (entry.versionstamp === null) {
          if (name === undefined) break; // unregistered meanwhile: the end is the same
          throw notFound(`no shared memory region '${one}'`);
        }
        const count = await this.#count(owner);
        const { ok } = await this.#kv.atomic()
          .check(entry, count)
          .delete(entry.key)
          .set(count.key, Math.max(0, count.value - 1))
          .commit();
        if (ok) break;
      }
    }
  }
}
