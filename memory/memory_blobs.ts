/**
 * Memories' bytes in the blob store, for replicas that share state. A memory's record names
 * the blob of its current bytes. A write stores the whole memory as a new blob and points
 * the record at it only if no replica wrote since this one last read it (an atomic check);
 * otherwise it reloads their bytes, applies its own region over them and tries again, so
 * concurrent writes to different regions all land and every replica reads a whole, verified
 * version. Each write stores the whole memory: memories written per request (burst output
 * slots) should be small in a cluster.
 */
import type { BlobStore } from "../store/blob_store.ts";
import type { StateStore } from "../store/state_store.ts";
import { KeyedTurns } from "../store/keyed_turns.ts";
import { DriverError } from "../nnapi/errors.ts";
import type { MemoryRecord, Pool } from "./pools.ts";

/** What a replica knows of a loaded memory: the `contents` its bytes match. */
export interface SyncState {
  /** null: zeros, never written; undefined: unknown (a write that did not land). */
  synced?: string | null;
}

/** Reads of a blob another replica just replaced, before giving up. */
const STALE_READS = 5;

/** The blob-store side of the memory pools. */
export class MemoryBlobs {
  readonly #kv: StateStore;
  readonly #blobs: BlobStore;
  /** Per memory, this replica's reload or write in flight: one at a time. */
  readonly #turns = new KeyedTurns();

  constructor(kv: StateStore, blobs: BlobStore) {
    this.#kv = kv;
    this.#blobs = blobs;
  }

  /**
   * Stores bytes of memory `id` as a new blob. Every write has its own scope, so no two
   * writes share a key and removing a replaced blob never removes a current one.
   */
  put(id: string, bytes: Uint8Array): Promise<string> {
    return this.#blobs.put(`memories/${id}/${crypto.randomUUID()}`, [bytes]);
  }

  /** Removes a replaced or deleted memory's blob; a failure only leaves garbage behind. */
  async remove(key: string): Promise<void> {
    await this.#blobs.delete(key).catch((error: Error) => {
      console.error(`nnserve: could not remove memory blob ${key}: ${error.message}`);
    });
  }

  /** Fills a new pool's bytes from its record; the `contents` read. */
  async read(record: MemoryRecord, into: Uint8Array): Promise<string | null> {
    const found = await this.#fetch(record);
    if (!found) throw new DriverError("NOT_FOUND", `no memory ${record.id}`);
    if (found.bytes) into.set(found.bytes);
    return found.contents;
  }

  /**
   * Brings a loaded pool's bytes up to date with its record, in place; false when the
   * memory was deleted.
   */
  refresh(pool: Pool, state: SyncState): Promise<boolean> {
    return this.#turn(pool, async () => {
      const record = await this.#record(pool);
      if (!record) return false;
      if ((record.contents ?? null) === state.synced) return true;
      return await this.#reload(pool, state, record);
    });
  }

  /**
   * Stores `region` at `offset` as the memory's new version, merged over other replicas'
   * writes; false when the memory was deleted (the bytes stay with the pool's holders).
   */
  write(pool: Pool, state: SyncState, offset: number, region: Uint8Array): Promise<boolean> {
    return this.#turn(pool, async () => {
      for (;;) {
        const entry = await this.#kv.get<MemoryRecord>(["memory", pool.owner, pool.id]);
        const record = entry.value;
        if (!record || record.deleted) return false;
        if ((record.contents ?? null) !== state.synced) {
          if (!await this.#reload(pool, state, record)) return false;
        }
        pool.bytes.set(region, offset);
        state.synced = undefined; // until the record names these bytes
        const contents = await this.put(pool.id, pool.bytes.slice());
        const { ok } = await this.#kv.atomic()
          .check(entry)
          .set(entry.key, { ...record, contents })
          .commit();
        if (!ok) {
          await this.remove(contents);
          continue; // another replica wrote or deleted meanwhile: merge over theirs
        }
        state.synced = contents;
        if (record.contents) await this.remove(record.contents);
        return true;
      }
    });
  }

  /** The memory's record, unless it is gone or deleted. */
  async #record(pool: Pool): Promise<MemoryRecord | undefined> {
    const record = (await this.#kv.get<MemoryRecord>(["memory", pool.owner, pool.id])).value;
    return record && !record.deleted ? record : undefined;
  }

  async #reload(pool: Pool, state: SyncState, record: MemoryRecord): Promise<boolean> {
    const found = await this.#fetch(record);
    if (!found) return false;
    if (found.bytes) pool.bytes.set(found.bytes);
    else pool.bytes.fill(0);
    state.synced = found.contents;
    return true;
  }

  /**
   * The bytes a record names (null: zeros). A blob gone because another replica replaced
   * it meanwhile is read again from the record; undefined when the memory was deleted.
   */
  async #fetch(
    record: MemoryRecord,
  ): Promise<{ bytes: Uint8Array | null; contents: string | null } | undefined> {
    for (let attempt = 1;; attempt++) {
      if (!record.contents) return { bytes: null, contents: null };
      try {
        const bytes = await this.#blobs.get(record.contents);
        if (bytes.byteLength !== record.size) {
          throw new DriverError(
            "GENERAL_FAILURE",
            `the stored contents of memory ${record.id} are ${bytes.byteLength} bytes, not ${record.size}`,
          );
        }
        return { bytes, contents: record.contents };
      } catch (error) {
        if (!(error instanceof DriverError && error.status === "NOT_FOUND")) throw error;
      }
      const current = await this.#kv.get<MemoryRecord>(["memory", record.owner, record.id]);
      if (!current.value || current.value.deleted) return undefined;
      if (current.value.contents === record.contents || attempt === STALE_READS) {
        throw new DriverError(
          "GENERAL_FAILURE",
          `the stored contents of memory ${record.id} are missing from the blob store`,
        );
      }
      record = current.value;
    }
  }

  #turn<T>(pool: Pool, run: () => Promise<T>): Promise<T> {
    return this.#turns.run(`${pool.owner}\0${pool.id}`, run);
  }
}
