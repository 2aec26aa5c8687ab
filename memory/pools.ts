/**
 * Shared memory pools (NNAPI `ANeuralNetworksMemory` / HAL `hidl_memory`): byte regions a
 * client creates once and references by {memory, offset, length} for model constants and
 * execution inputs/outputs. Each pool lives in a SharedArrayBuffer, so executor workers read
 * it without copies, and is kept where it survives restarts: embedded, in a file under the
 * data directory (`memory_files.ts`), written in place; with replicas sharing state, in the
 * blob store (`memory_blobs.ts`), so every replica reads and writes the same bytes.
 *
 * A client's budget is one KV counter updated in the same atomic commit as the record it
 * accounts for, so concurrent creates and deletes can never lose an update. A memory that a
 * burst slot or a running execution holds when its client deletes it disappears for the
 * client at once, but its bytes stay counted until the last holder lets go.
 */
import type { StateEntry, StateKey, StateStore } from "../store/state_store.ts";
import type { BlobStore } from "../store/blob_store.ts";
import { DriverError, invalid, notFound } from "../nnapi/errors.ts";
import { kvCounter } from "../store/kv_counters.ts";
import { MemoryFiles } from "./memory_files.ts";
import { type Blocks, MemoryBlobs, type SyncState, zeroBlocks } from "./memory_blobs.ts";

/** What a client sees of a memory. */
export interface MemoryInfo {
  id: string;
  size: number;
  createdAt: string;
}

export interface MemoryRecord extends MemoryInfo {
  owner: string;
  /** Deleted by its client while held: invisible, but still counted in the budget. */
  deleted?: true;
  /** Replicas sharing state: the blobs of the bytes, block by block (absent: all zeros). */
  blocks?: Blocks;
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
  /**
   * Brings the bytes up to date with writes made through other replicas (a burst slot
   * before each request that reads it); nothing to do on one replica.
   */
  refresh(): Promise<void>;
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
  /** The record's blocks the bytes match (replicas sharing state: `memory_blobs.ts`). */
  synced?: SyncState["synced"];
}

/** All clients' memory pools. */
export class MemoryPools {
  readonly limits: MemoryLimits;
  readonly #kv: StateStore;
  /** Where the bytes are kept: this replica's files, or blobs every replica shares. */
  readonly #files: MemoryFiles;
  readonly #blobs?: MemoryBlobs;
  /** Keyed by owner and id, so one client's lookups never disturb another's. */
  readonly #states = new Map<string, PoolState>();
  /** Per owner, the clean-up of memories an earlier process left deleted-but-held. */
  readonly #recovered = new Map<string, Promise<void>>();

  /** With a state store replicas share, the bytes go to `blobs` (required then). */
  constructor(
    kv: StateStore,
    dataDir: string,
    options: { limits?: MemoryLimits; blobs?: BlobStore } = {},
  ) {
    this.#kv = kv;
    this.#files = new MemoryFiles(`${dataDir}/memories`);
    if (kv.shared) {
      if (!options.blobs) throw new TypeError("memories on a shared state store need blobs");
      this.#blobs = new MemoryBlobs(kv, options.blobs);
    }
    this.limits = options.limits ?? DEFAULT_MEMORY_LIMITS;
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
    if (this.#blobs) {
      // Blocks of zeros need no blob.
      record.blocks = content instanceof Uint8Array
        ? await this.#blobs.store(record.id, content)
        : zeroBlocks(size);
    } else {
      await this.#files.create(record.id, bytes);
    }
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
      await this.#removeContents(record);
      throw error;
    }
    const pool: Pool = { id: record.id, owner, size, bytes };
    this.#states.set(`${owner}\0${record.id}`, {
      ready: Promise.resolve(pool),
      deleted: false,
      holds: 0,
      synced: record.blocks,
    });
    const { id, createdAt } = record;
    return { id, size, createdAt };
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

  /**
   * A client's memory, loaded on first use after a restart. With replicas sharing state,
   * its record is read on every use, so another replica's write or delete is seen at once.
   */
  async get(owner: string, id: string): Promise<Pool> {
    await this.#recover(owner);
    const key = `${owner}\0${id}`;
    const known = this.#states.get(key);
    if (known) {
      const pool = await known.ready;
      if (known.deleted) throw notFound(`no memory ${id}`);
      if (this.#blobs) await this.#refresh(known, pool, true);
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

  /** Reads a memory's bytes; a delete that lands meanwhile makes it NOT_FOUND. */
  async #load(owner: string, id: string, state: () => PoolState): Promise<Pool> {
    const record = (await this.#kv.get<MemoryRecord>(recordKey(owner, id))).value;
    if (!record || record.deleted) throw notFound(`no memory ${id}`);
    const bytes = new Uint8Array(new SharedArrayBuffer(record.size));
    if (this.#blobs) state().synced = await this.#blobs.read(record, bytes);
    else await this.#files.read(id, bytes);
    if (state().deleted) throw notFound(`no memory ${id}`);
    return { id, owner, size: record.size, bytes };
  }

  /**
   * Replicas sharing state: brings a loaded pool's bytes up to date with its record, in place
   * (so burst slots and executions holding it see them). `visible`: a memory deleted (or
   * gone) is NOT_FOUND; otherwise (a holder) its last bytes stay as they are.
   */
  async #refresh(state: PoolState, pool: Pool, visible: boolean): Promise<void> {
    if (await this.#blobs!.refresh(pool, state)) return;
    this.#forget(pool.owner, pool.id, state);
    if (visible) throw notFound(`no memory ${pool.id}`);
  }

  /** Hides a memory from this replica's clients (deleted here or on another replica). */
  #forget(owner: string, id: string, state: PoolState): void {
    const key = `${owner}\0${id}`;
    if (this.#states.get(key) === state) this.#states.delete(key);
    state.deleted = true;
  }

  /** Another replica deleted a memory: this one drops what it loaded of it. */
  forgetDeleted(owner: string, id: string): void {
    const state = this.#states.get(`${owner}\0${id}`);
    if (state) this.#forget(owner, id, state);
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
      refresh: async () => {
        if (this.#blobs && !state.deleted) await this.#refresh(state, pool, false);
      },
    };
  }

  /** Writes bytes at `offset` and makes them durable. */
  async write(owner: string, id: string, offset: number, bytes: Uint8Array): Promise<void> {
    const pool = await this.get(owner, id);
    checkRegion(pool.size, offset, bytes.byteLength, `memory ${id}`);
    pool.bytes.set(bytes, offset);
    await this.persist(pool, offset, bytes.byteLength);
  }

  /**
   * Keeps a region of a pool that was just written in place: in its file, or (replicas
   * sharing state) as new blobs of the blocks it touches, merged over what other replicas
   * wrote.
   */
  async persist(pool: Pool, offset: number, length: number): Promise<void> {
    const state = this.#states.get(`${pool.owner}\0${pool.id}`);
    if (length === 0 || !state || state.deleted) return; // deleted: nothing to keep
    // Taken now: the pool's bytes may be reloaded before the write's turn comes.
    const region = pool.bytes.slice(offset, offset + length);
    if (!this.#blobs) return await this.#files.write(pool.id, offset, region);
    if (!await this.#blobs.write(pool, state, offset, region)) {
      this.#forget(pool.owner, pool.id, state);
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
    const state = this.#states.get(`${owner}\0${id}`);
    if (state) this.#forget(owner, id, state);
    if (!this.#blobs) await this.#files.remove(id);
    if (!state || state.holds === 0) await this.#finalize(owner, id);
  }

  /** Removes a memory's stored bytes (a file, or every blob stored under it). */
  async #removeContents(record: MemoryRecord): Promise<void> {
    if (!this.#blobs) await this.#files.remove(record.id);
    else await this.#blobs.removeAll(record.id);
  }

  /**
   * Replicas sharing state: removes memory blobs that crashed writes left and no record
   * names (`memory_blobs.ts`); the number removed (none on one replica, whose files are
   * written in place).
   */
  async sweepOrphans(): Promise<number> {
    if (!this.#blobs) return 0;
    const named = new Set<string>();
    for await (const entry of this.#kv.list<MemoryRecord>({ prefix: ["memory"] })) {
      for (const key of entry.value.blocks ?? []) if (key) named.add(key);
    }
    return await this.#blobs.sweep(named);
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
      if (ok) return await this.#removeContents(entry.value);
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
