/**
 * Memories' bytes in the blob store, for replicas that share state. A memory is stored in
 * blocks of {@link BLOCK_BYTES}, each its own blob, and its record lists them (null: a block
 * of zeros, never written). A write stores the blocks its region touches as new blobs and
 * points the record at them only if no replica wrote since this one last read it (an
 * atomic check); otherwise it reloads the blocks they changed, applies its own region over
 * them and tries again, so concurrent writes to different regions all land and every
 * replica reads a whole, verified version. A write costs the blocks it touches, not the
 * memory; a reload, the blocks that changed.
 *
 * A replica that crashes between storing a write's blocks and naming them leaves blobs no
 * record names. Each block's scope carries the time it was stored, so a sweep
 * ({@link MemoryBlobs.sweep}) removes unnamed blocks once they are older than any write
 * in flight can be ({@link ORPHAN_GRACE_MS}: a write whose blocks got that old starts over);
 * a memory's removal removes every block stored under it.
 */
import type { BlobStore } from "../store/blob_store.ts";
import type { StateStore } from "../store/state_store.ts";
import { KeyedTurns } from "../store/keyed_turns.ts";
import { DriverError } from "../nnapi/errors.ts";
import type { MemoryRecord, Pool } from "./pools.ts";

/**
 * Bytes per block: small enough that a small write to a large memory stays cheap (it
 * stores one block again), large enough that a blob's overhead is small against its bytes.
 */
export const BLOCK_BYTES = 1024 * 1024;

/** A memory's blocks: each one's blob key, or null for zeros. */
export type Blocks = (string | null)[];

/** What a replica knows of a loaded memory: the blocks its bytes match. */
export interface SyncState {
  /**
   * Per block, the key its bytes match; an undefined entry (or no list) is unknown, as
   * after a write that did not land, and is read again.
   */
  synced?: (string | null | undefined)[];
}

/**
 * How old a block no record names must be before a sweep removes it: a write takes far less
 * between storing its blocks and naming them, and one that took half of it starts over.
 */
export const ORPHAN_GRACE_MS = 10 * 60 * 1000;

/** Where a memory's blocks are stored: under its id, each write's scope its time first. */
const BLOCK_PREFIX = "memories/";

/** The memory id and storage time of a block (ms; undefined for blocks stored before times were kept). */
function blockOrigin(key: string): { id: string; storedAt?: number } | undefined {
  const [, id, scope] = key.slice(BLOCK_PREFIX.length - 1).split("/");
  if (!id || !scope) return undefined;
  const time = /^(\d+)-/.exec(scope);
  return { id, storedAt: time ? Number(time[1]) : undefined };
}

/** Reads of a block another replica just replaced, before giving up. */
const STALE_READS = 5;

/** Blocks stored or read at once. */
const PARALLEL_BLOCKS = 8;

/** The blocks of a memory of `size` bytes. */
function blockCount(size: number): number {
  return Math.ceil(size / BLOCK_BYTES);
}

/** The blocks of a memory of `size` bytes of zeros. */
export function zeroBlocks(size: number): Blocks {
  return new Array(blockCount(size)).fill(null);
}

/** The blocks of a record (none listed: zeros). */
function blocksOf(record: MemoryRecord): Blocks {
  return record.blocks ?? zeroBlocks(record.size);
}

/** Runs `task` for 0..n-1, at most {@link PARALLEL_BLOCKS} at once. */
async function forEachBlock(n: number, task: (b: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(n, PARALLEL_BLOCKS) }, lane));
}

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

  /** Stores a new memory's bytes: its blocks, with blocks of zeros stored as null. */
  async store(id: string, bytes: Uint8Array): Promise<Blocks> {
    const blocks: Blocks = new Array(blockCount(bytes.byteLength)).fill(null);
    try {
      await forEachBlock(blocks.length, async (b) => {
        const block = bytes.subarray(b * BLOCK_BYTES, (b + 1) * BLOCK_BYTES);
        if (block.some((byte) => byte !== 0)) blocks[b] = await this.#put(id, block);
      });
    } catch (error) {
      await this.remove(blocks);
      throw error;
    }
    return blocks;
  }

  /** Removes blocks no record names any more; a failure only leaves garbage behind. */
  async remove(blocks: Blocks): Promise<void> {
    await Promise.all(blocks.map(async (key) => {
      if (!key) return;
      await this.#blobs.delete(key).catch((error: Error) => {
        console.error(`nnserve: could not remove memory blob ${key}: ${error.message}`);
      });
    }));
  }

  /** Fills a new pool's bytes from its record; the blocks read. */
  async read(record: MemoryRecord, into: Uint8Array): Promise<Blocks> {
    const state: SyncState = {};
    if (!await this.#reload(into, state, record)) {
      throw new DriverError("NOT_FOUND", `no memory ${record.id}`);
    }
    return state.synced as Blocks;
  }

  /**
   * Brings a loaded pool's bytes up to date with its record, in place (the blocks that
   * changed); false when the memory was deleted.
   */
  refresh(pool: Pool, state: SyncState): Promise<boolean> {
    return this.#turn(pool, async () => {
      const record = (await this.#kv.get<MemoryRecord>(["memory", pool.owner, pool.id])).value;
      if (!record || record.deleted) return false;
      return await this.#reload(pool.bytes, state, record);
    });
  }

  /**
   * Stores `region` at `offset` as the memory's new version, merged over other replicas'
   * writes; false when the memory was deleted (the bytes stay with the pool's holders).
   */
  write(pool: Pool, state: SyncState, offset: number, region: Uint8Array): Promise<boolean> {
    return this.#turn(pool, async () => {
      if (region.byteLength === 0) return true;
      const first = Math.floor(offset / BLOCK_BYTES);
      const last = Math.floor((offset + region.byteLength - 1) / BLOCK_BYTES);
      for (;;) {
        const storing = Date.now();
        const entry = await this.#kv.get<MemoryRecord>(["memory", pool.owner, pool.id]);
        const record = entry.value;
        if (!record || record.deleted) return false;
        if (!await this.#reload(pool.bytes, state, record)) return false;
        pool.bytes.set(region, offset);
        const before = blocksOf(record);
        const blocks = [...before];
        // The written blocks match no stored version until the record names them.
        state.synced = before.map((key, b) => b < first || b > last ? key : undefined);
        await forEachBlock(last - first + 1, async (k) => {
          const b = first + k;
          blocks[b] = await this.#put(
            pool.id,
            pool.bytes.slice(b * BLOCK_BYTES, (b + 1) * BLOCK_BYTES),
          );
        });
        const written = blocks.slice(first, last + 1);
        if (Date.now() - storing > ORPHAN_GRACE_MS / 2) {
          // A sweep may take blocks this old for a crashed write's: store them again.
          await this.remove(written);
          continue;
        }
        const { ok } = await this.#kv.atomic()
          .check(entry)
          .set(entry.key, { ...record, blocks })
          .commit();
        if (!ok) {
          await this.remove(written);
          continue; // another replica wrote or deleted meanwhile: merge over theirs
        }
        state.synced = blocks;
        await this.remove(before.slice(first, last + 1));
        return true;
      }
    });
  }

  /**
   * Stores one block as a new blob. Every write has its own scope, so no two writes share
   * a key and removing a replaced block never removes a current one.
   */
  #put(id: string, block: Uint8Array): Promise<string> {
    return this.#blobs.put(`${BLOCK_PREFIX}${id}/${Date.now()}-${crypto.randomUUID()}`, [block]);
  }

  /**
   * Removes the blocks no record names that are older than {@link ORPHAN_GRACE_MS} (younger
   * ones may be a write or a create in flight on another replica). `named` holds every block
   * the memories' records name. The number of blobs removed.
   */
  async sweep(named: ReadonlySet<string>, now = Date.now()): Promise<number> {
    const doomed: string[] = [];
    for await (const key of this.#blobs.list(BLOCK_PREFIX)) {
      const storedAt = blockOrigin(key)?.storedAt;
      if (named.has(key) || storedAt === undefined || now - storedAt <= ORPHAN_GRACE_MS) continue;
      doomed.push(key);
    }
    await this.remove(doomed);
    return doomed.length;
  }

  /** Removes every block of a memory whose record is gone (named or not). */
  async removeAll(id: string): Promise<void> {
    await this.remove(await Array.fromAsync(this.#blobs.list(`${BLOCK_PREFIX}${id}/`)));
  }

  /**
   * Reads into `bytes` the blocks of `record` that differ from what `state` says they hold
   * (all of them when it does not know), and notes the record's blocks as synced; false
   * when the memory was deleted meanwhile.
   */
  async #reload(bytes: Uint8Array, state: SyncState, record: MemoryRecord): Promise<boolean> {
    for (let attempt = 1;; attempt++) {
      const blocks = blocksOf(record);
      const known = state.synced;
      let missing: string | undefined;
      await forEachBlock(blocks.length, async (b) => {
        const key = blocks[b];
        if (known && known[b] === key) return;
        const at = b * BLOCK_BYTES;
        const size = Math.min(BLOCK_BYTES, record.size - at);
        if (!key) return void bytes.fill(0, at, at + size);
        try {
          const block = await this.#blobs.get(key);
          if (block.byteLength !== size) {
            throw new DriverError(
              "GENERAL_FAILURE",
              `block ${b} of memory ${record.id} is ${block.byteLength} bytes, not ${size}`,
            );
          }
          bytes.set(block, at);
        } catch (error) {
          if (!(error instanceof DriverError && error.status === "NOT_FOUND")) throw error;
          missing = key;
        }
      });
      if (!missing) {
        state.synced = blocks;
        return true;
      }
      // Gone: another replica replaced it meanwhile (read the record again), or it is lost.
      state.synced = blocks.map((key) => key === missing ? undefined : key);
      const current = await this.#kv.get<MemoryRecord>(["memory", record.owner, record.id]);
      if (!current.value || current.value.deleted) return false;
      if (blocksOf(current.value).includes(missing) || attempt === STALE_READS) {
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
