/**
 * Shared memory pools (NNAPI `ANeuralNetworksMemory` / HAL `hidl_memory`): byte regions a
 * client creates once and references by {memory, offset, length} for model constants and
 * execution inputs/outputs. Each pool lives in a SharedArrayBuffer, so executor workers read
 * it without copies, and in a file under the data directory, so it survives restarts.
 *
 * A client's budget is one KV counter updated in the same atomic commit as the record it
 * accounts for, so concurrent creates and deletes can never lose an update. A memory that a
 * burst slot or a running execution holds when its client deletes it disappears for the
 * client at once, but its bytes stay counted until the last holder lets go.
 */
import type { StateEntry, StateKey, StateStore } from "../store/state_store.ts";
import { DriverError, invalid, notFound } from "../nnapi/errors.ts";
import { removeIfPresent, writeFileAtomic } from "../store/atomic_file.ts";
import { kvCounter } from "../store/kv_counters.ts";

/** What a client sees of a memory. */
export interface MemoryInfo {
  id: string;
  size: number;
  createdAt: string;
}

interface MemoryRecord extends MemoryInfo {
  owner: string;
  /** Deleted by its client while held: invisible, but still counted in the budget. */
  deleted?: true;
}

/** A loaded pool: its bytes are a view over shared memory. */
export interface Pool {
  readonly id: string;
  readonly owner: string;
  readonly size: number;
  readonly bytes: Uint8Array<SharedArrayBuffer>;
}

/** A pool kept alive (and counted) for a burst slot or an execution until `release`. */
export interface HeldPool {
  readonly pool: Pool;
  /** Lets go of the pool; idempotent. */
  release(): void;
  /** One more hold on the same pool (an execution using a slot), even if it was deleted. */
  retain(): HeldPool;
}

/** Size limits of memories (RESOURCE_EXHAUSTED_PERSISTENT past them). */
export interface MemoryLimits {
  /** Largest single memory, in bytes. */
  maxMemoryBytes: number;
  /** Total bytes of all memories of one client. */
  clientBudgetBytes: number;
}

/** Defaults: 1 GiB per memory, 4 GiB per client. */
export const DEFAULT_MEMORY_LIMITS: MemoryLimits = {
  maxMemoryBytes: 1024 ** 3,
  clientBudgetBytes: 4 * 1024 ** 3,
};

/** Checks that [offset, offset + length) lies inside a region of `size` bytes. */
export function checkRegion(size: number, offset: number, length: number, what: string): void {
  if (!Number.isInteger(offset) || !Number.isInteger(length) || offset < 0 || length < 0) {
    throw invalid(`${what}: offset and length must be non-negative integers`);
  }
  if (offset + length > size) {
    throw invalid(
      `${what}: region [${offset}, ${offset + length}) is outside the memory of ${size} bytes`,
    );
  }
}

const recordKey = (owner: string, id: string): StateKey => ["memory", owner, id];
const usageKey = (owner: string): StateKey => ["memory_usage", owner];

/** This process's view of one memory: its bytes once loaded, and who holds them. */
interface PoolState {
  readonly ready: Promise<Pool>;
  /** Set when the client deleted it: nobody new gets it. */
  deleted: boolean;
  /** Burst slots and running executions using it. */
  holds: number;
}

/** All clients' memory pools. */
export class MemoryPools {
  readonly limits: MemoryLimits;
  readonly #kv: StateStore;
  readonly #dir: string;
  /** Keyed by owner and id, so one client's lookups never disturb another's. */
  readonly #states = new Map<string, PoolState>();
  /** Per owner, the clean-up of memories an earlier process left deleted-but-held. */
  readonly #recovered = new Map<string, Promise<void>>();

  constructor(kv: StateStore, dataDir: string, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS) {
    this.#kv = kv;
    this.#dir = `${dataDir}/memories`;
    this.limits = limits;
    Deno.mkdirSync(this.#dir, { recursive: true });
  }

  #file(id: string): string {
    return `${this.#dir}/${id}.bin`;
  }

  /** Creates a memory from bytes, or zero-filled of `size` bytes. */
  async create(owner: string, content: Uint8Array | { size: number }): Promise<MemoryInfo> {
    const size = content instanceof Uint8Array ? content.byteLength : content.size;
    if (size > this.limits.maxMemoryBytes) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_PERSISTENT",
        `a memory of ${size} bytes is over the limit of ${this.limits.maxMemoryBytes} bytes`,
        { limit: "memory_size" },
      );
    }
    await this.#recover(owner);
    const record: MemoryRecord = {
      id: crypto.randomUUID(),
      owner,
      size,
      createdAt: new Date().toISOString(),
    };
    // Cheap refusal before writing anything; the commit below decides.
    this.#checkBudget((await this.#usage(owner)).value, size);
    const bytes = new Uint8Array(new SharedArrayBuffer(size));
    if (content instanceof Uint8Array) bytes.set(content);
    await writeFileAtomic(this.#file(record.id), bytes);
    try {
      for (let committed = false; !committed;) {
        const usage = await this.#usage(owner);
        this.#checkBudget(usage.value, size);
        committed = (await this.#kv.atomic()
          .check(usage)
          .set(usageKey(owner), usage.value + size)
          .set(recordKey(owner, record.id), record)
          .commit()).ok;
      }
    } catch (error) {
      await removeIfPresent(this.#file(record.id));
      throw error;
    }
    const pool: Pool = { id: record.id, owner, size, bytes };
    this.#states.set(`${owner}\0${record.id}`, {
      ready: Promise.resolve(pool),
      deleted: false,
      holds: 0,
    });
    const { owner: _owner, ...info } = record;
    return info;
  }

  #checkBudget(used: number, size: number): void {
    if (used + size > this.limits.clientBudgetBytes) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_PERSISTENT",
        `this client's memories would take ${
          used + size
        } bytes, over the budget of ${this.limits.clientBudgetBytes}`,
        { limit: "memory_budget" },
      );
    }
  }

  /** A client's memory, loaded from its file on first use after a restart. */
  async get(owner: string, id: string): Promise<Pool> {
    await this.#recover(owner);
    const key = `${owner}\0${id}`;
    const known = this.#states.get(key);
    if (known) {
      const pool = await known.ready;
      if (known.deleted) throw notFound(`no memory ${id}`);
      return pool;
    }
    const state: PoolState = {
      ready: this.#load(owner, id, () => state),
      deleted: false,
      holds: 0,
    };
    this.#states.set(key, state);
    try {
      return await state.ready;
    } catch (error) {
      if (this.#states.get(key) === state) this.#states.delete(key);
      throw error;
    }
  }

  /** Reads a memory's file; a delete that lands meanwhile makes it NOT_FOUND. */
  async #load(owner: string, id: string, state: () => PoolState): Promise<Pool> {
    const record = (await this.#kv.get<MemoryRecord>(recordKey(owner, id))).value;
    if (!record || record.deleted) throw notFound(`no memory ${id}`);
    const bytes = new Uint8Array(new SharedArrayBuffer(record.size));
    let read = 0;
    try {
      using file = await Deno.open(this.#file(id), { read: true });
      while (read < record.size) {
        const n = await file.read(bytes.subarray(read));
        if (n === null) break;
        read += n;
      }
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound)) throw error;
    }
    if (state().deleted) throw notFound(`no memory ${id}`);
    if (read !== record.size) {
      throw new DriverError("GENERAL_FAILURE", `the stored contents of memory ${id} are short`);
    }
    return { id, owner, size: record.size, bytes };
  }

  /**
   * Takes a memory for a burst slot or an execution: deleting it meanwhile hides it from its
   * client, but its bytes stay valid and counted in the budget until `release`.
   */
  async hold(owner: string, id: string): Promise<HeldPool> {
    const pool = await this.get(owner, id);
    const state = this.#states.get(`${owner}\0${id}`);
    if (!state || state.deleted) throw notFound(`no memory ${id}`);
    return this.#holdState(state, pool);
  }

  #holdState(state: PoolState, pool: Pool): HeldPool {
    state.holds++;
    let released = false;
    return {
      pool,
      release: () => {
        if (released) return;
        released = true;
        state.holds--;
        if (state.deleted && state.holds === 0) this.#finalizeInBackground(pool.owner, pool.id);
      },
      retain: () => this.#holdState(state, pool),
    };
  }

  /** Writes bytes at `offset` and makes them durable. */
  async write(owner: string, id: string, offset: number, bytes: Uint8Array): Promise<void> {
    const pool = await this.get(owner, id);
    checkRegion(pool.size, offset, bytes.byteLength, `memory ${id}`);
    pool.bytes.set(bytes, offset);
    await this.persist(pool, offset, bytes.byteLength);
  }

  /** Writes a region of a pool's current contents to its file (after in-place writes). */
  async persist(pool: Pool, offset: number, length: number): Promise<void> {
    const state = this.#states.get(`${pool.owner}\0${pool.id}`);
    if (length === 0 || !state || state.deleted) return; // deleted: nothing to keep
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.#file(pool.id), { write: true });
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return; // deleted meanwhile
      throw error;
    }
    try {
      await file.seek(offset, Deno.SeekMode.Start);
      const region = pool.bytes.slice(offset, offset + length);
      let written = 0;
      while (written < length) written += await file.write(region.subarray(written));
      await file.syncData();
    } finally {
      file.close();
    }
  }

  /**
   * Deletes a memory: one atomic step marks it deleted (so of concurrent deletes exactly one
   * succeeds); its budget is given back now, or when the last holder lets go.
   */
  async delete(owner: string, id: string): Promise<void> {
    await this.#recover(owner);
    for (let committed = false; !committed;) {
      const entry = await this.#kv.get<MemoryRecord>(recordKey(owner, id));
      if (!entry.value || entry.value.deleted) throw notFound(`no memory ${id}`);
      committed = (await this.#kv.atomic()
        .check(entry)
        .set(recordKey(owner, id), { ...entry.value, deleted: true })
        .commit()).ok;
    }
    const key = `${owner}\0${id}`;
    const state = this.#states.get(key);
    this.#states.delete(key);
    if (state) state.deleted = true;
    await removeIfPresent(this.#file(id));
    if (!state || state.holds === 0) await this.#finalize(owner, id);
  }

  /** Removes a deleted memory's record and gives its bytes back to the budget, atomically. */
  async #finalize(owner: string, id: string): Promise<void> {
    for (;;) {
      const entry = await this.#kv.get<MemoryRecord>(recordKey(owner, id));
      if (!entry.value) return;
      const usage = await this.#usage(owner);
      const { ok } = await this.#kv.atomic()
        .check(entry, usage)
        .delete(recordKey(owner, id))
        .set(usageKey(owner), Math.max(0, usage.value - entry.value.size))
        .commit();
      if (ok) return;
    }
  }

  #finalizeInBackground(owner: string, id: string): void {
    this.#finalize(owner, id).catch((error) => {
      console.error(`nnserve: could not release memory ${id}: ${(error as Error).message}`);
    });
  }

  /** Bytes of memories per client, for metrics (clients counted so far). */
  async usageByClient(): Promise<Map<string, number>> {
    const usage = new Map<string, number>();
    for await (const entry of this.#kv.list<number>({ prefix: ["memory_usage"] })) {
      usage.set(String(entry.key[1]), entry.value);
    }
    return usage;
  }

  /** The client's usage counter (`kv_counters.ts`). */
  #usage(owner: string): Promise<StateEntry<number>> {
    return kvCounter(this.#kv, usageKey(owner), async () => {
      let total = 0;
      for await (const record of this.#kv.list<MemoryRecord>({ prefix: ["memory", owner] })) {
        total += record.value.size;
      }
      return total;
    });
  }

  /**
   * Holders do not outlive a process: memories an earlier process left deleted-but-held are
   * released before this process first touches the client's memories.
   */
  #recover(owner: string): Promise<void> {
    let recovery = this.#recovered.get(owner);
    if (!recovery) {
      recovery = (async () => {
        for await (const entry of this.#kv.list<MemoryRecord>({ prefix: ["memory", owner] })) {
          if (entry.value.deleted) await this.#finalize(owner, entry.value.id);
        }
      })();
      this.#recovered.set(owner, recovery);
      recovery.catch(() => this.#recovered.delete(owner));
    }
    return recovery;
  }
}
