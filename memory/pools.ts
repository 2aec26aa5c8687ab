/**
 * Shared memory pools (NNAPI `ANeuralNetworksMemory` / HAL `hidl_memory`): byte regions a
 * client creates once and references by {memory, offset, length} for model constants and
 * execution inputs/outputs. Each pool lives in a SharedArrayBuffer, so executor workers read
 * it without copies, and in a file under the data directory, so it survives restarts.
 */
import { DriverError, invalid, notFound } from "../nnapi/errors.ts";
import { removeIfPresent, writeFileAtomic } from "../store/atomic_file.ts";

/** What a client sees of a memory. */
export interface MemoryInfo {
  id: string;
  size: number;
  createdAt: string;
}

interface MemoryRecord extends MemoryInfo {
  owner: string;
}

/** A loaded pool: its bytes are a view over shared memory. */
export interface Pool {
  readonly id: string;
  readonly owner: string;
  readonly size: number;
  readonly bytes: Uint8Array<SharedArrayBuffer>;
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

/** All clients' memory pools. */
export class MemoryPools {
  readonly limits: MemoryLimits;
  readonly #kv: Deno.Kv;
  readonly #dir: string;
  readonly #loaded = new Map<string, Pool>();
  readonly #usage = new Map<string, number>();

  constructor(kv: Deno.Kv, dataDir: string, limits: MemoryLimits = DEFAULT_MEMORY_LIMITS) {
    this.#kv = kv;
    this.#dir = `${dataDir}/memories`;
    this.limits = limits;
    Deno.mkdirSync(this.#dir, { recursive: true });
  }

  #file(id: string): string {
    return `${this.#dir}/${id}.bin`;
  }

  /** Bytes the client's memories take, computed once from KV then kept up to date. */
  async #clientUsage(owner: string): Promise<number> {
    const known = this.#usage.get(owner);
    if (known !== undefined) return known;
    let total = 0;
    for await (const entry of this.#kv.list<MemoryRecord>({ prefix: ["memory", owner] })) {
      total += entry.value.size;
    }
    if (!this.#usage.has(owner)) this.#usage.set(owner, total);
    return this.#usage.get(owner)!;
  }

  /** Creates a memory from bytes, or zero-filled of `size` bytes. */
  async create(owner: string, content: Uint8Array | { size: number }): Promise<MemoryInfo> {
    const size = content instanceof Uint8Array ? content.byteLength : content.size;
    if (size > this.limits.maxMemoryBytes) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_PERSISTENT",
        `a memory of ${size} bytes is over the limit of ${this.limits.maxMemoryBytes} bytes`,
      );
    }
    const used = await this.#clientUsage(owner);
    if (used + size > this.limits.clientBudgetBytes) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_PERSISTENT",
        `this client's memories would take ${
          used + size
        } bytes, over the budget of ${this.limits.clientBudgetBytes}`,
      );
    }
    this.#usage.set(owner, used + size);
    const record: MemoryRecord = {
      id: crypto.randomUUID(),
      owner,
      size,
      createdAt: new Date().toISOString(),
    };
    const bytes = new Uint8Array(new SharedArrayBuffer(size));
    if (content instanceof Uint8Array) bytes.set(content);
    try {
      await writeFileAtomic(this.#file(record.id), bytes);
      await this.#kv.set(["memory", owner, record.id], record);
    } catch (error) {
      this.#usage.set(owner, (this.#usage.get(owner) ?? size) - size);
      throw error;
    }
    this.#loaded.set(record.id, { id: record.id, owner, size, bytes });
    const { owner: _owner, ...info } = record;
    return info;
  }

  /** A client's memory, loaded from its file on first use after a restart. */
  async get(owner: string, id: string): Promise<Pool> {
    const loaded = this.#loaded.get(id);
    if (loaded) {
      if (loaded.owner !== owner) throw notFound(`no memory ${id}`);
      return loaded;
    }
    const record = (await this.#kv.get<MemoryRecord>(["memory", owner, id])).value;
    if (!record) throw notFound(`no memory ${id}`);
    const bytes = new Uint8Array(new SharedArrayBuffer(record.size));
    const file = await Deno.open(this.#file(id), { read: true });
    try {
      let read = 0;
      while (read < record.size) {
        const n = await file.read(bytes.subarray(read));
        if (n === null) break;
        read += n;
      }
      if (read !== record.size) {
        throw new DriverError("GENERAL_FAILURE", `the stored contents of memory ${id} are short`);
      }
    } finally {
      file.close();
    }
    const pool = this.#loaded.get(id) ?? { id, owner, size: record.size, bytes };
    this.#loaded.set(id, pool);
    return pool;
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
    if (length === 0 || !this.#loaded.has(pool.id)) return; // deleted: nothing to keep
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

  /** Deletes a memory; executions already holding it finish with what they read. */
  async delete(owner: string, id: string): Promise<void> {
    const pool = await this.get(owner, id);
    const used = await this.#clientUsage(owner);
    await this.#kv.delete(["memory", owner, id]);
    this.#loaded.delete(id);
    this.#usage.set(owner, used - pool.size);
    await removeIfPresent(this.#file(id));
  }
}
