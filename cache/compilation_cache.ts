/**
 * The compilation cache (NNAPI HAL 1.2 caching, on the server). Security rests, as NNAPI
 * requires, on a persistent map in the state store from cache key to the SHA-256 of the model
 * cache, computed from the in-memory bytes before they are written; any doubt about what a
 * lookup finds is a rejection (the entry dropped, the model prepared again), never an error.
 * A size budget evicts least recently used entries.
 *
 * Embedded (a state store of one process): the cache directory is the untrusted "app
 * directory": anyone may overwrite its files. Loading reads the model cache into memory,
 * hashes those very bytes and compares before anything is decoded (no time-of-check/
 * time-of-use gap). The data cache (weights only) is read straight into shared memory on
 * first need and checked for its recorded size and for a header naming its key and
 * generation (so files swapped between entries are refused), not hashed: tampering with its
 * weights can change output values, never the plan. Files are written atomically under a
 * fresh generation name that only the map entry points to, so concurrent writers, crashes
 * mid-write and swapped files never yield an accepted mix. A different driver version than
 * last time empties map and directory.
 *
 * Shared (replicas on one PostgreSQL): the model and data caches are blobs
 * (`cache/<key>-<generation>/<sha256>`) in the blob store every replica reads, and the map
 * entry names them, so what one replica prepared is a hit on every other. The blob store
 * checks both against their hashes on every read (the data cache too, read at lookup).
 * Writes that replace or remove an entry are atomic commits checked against the entry read,
 * so two replicas saving one key never leave the map naming deleted blobs, and an entry's
 * blobs are deleted only once the map no longer names them; a reader that finds a blob gone
 * looks at the map once more (another replica may just have replaced the entry) before it
 * calls the entry rejected. The map is never reset for another driver version: in a rolling
 * deploy old and new replicas share it, the key includes the version (so another version's
 * entries are never selected) and LRU eviction removes them. `exclusive` makes one replica
 * prepare a key while the others wait, then find it saved.
 */
import type { BlobStore } from "../store/blob_store.ts";
import { sha256Hex } from "../store/bytes.ts";
import type { StateEntryMaybe, StateStore } from "../store/state_store.ts";
import { removeIfPresent, writeFileAtomic } from "../store/atomic_file.ts";
import { blobScope, type CacheEntry, cacheFiles, dataHeader, readData } from "./cache_layout.ts";
import { KeyedTurns } from "../store/keyed_turns.ts";

/** How often a hit refreshes an entry's last use (LRU order), to keep hits cheap. */
const LAST_USED_RESOLUTION_MS = 10_000;

/**
 * A data cache file checked for its header and size but not read yet: like a driver's
 * mmap of its cache files, the weights are read when first needed. `read` checks header
 * and size again and returns null when the file no longer matches. A shared cache's data
 * blob is read (and checked against its hash) at lookup, since `read` cannot wait for the
 * blob store: its `read` returns those bytes.
 */
export interface DataCacheHandle {
  readonly size: number;
  read(): Uint8Array | null;
}

/** The outcome of a lookup. */
export type CacheLookup =
  | { kind: "hit"; model: Uint8Array; data: DataCacheHandle }
  | { kind: "miss" }
  | { kind: "rejected"; reason: string };

/** Where the cache lives and how large it may grow. */
export interface CacheConfig {
  kv: StateStore;
  /** The cache files' directory (embedded; a shared cache keeps nothing on local disk). */
  dir: string;
  /** Where a shared cache keeps its model and data caches: required when `kv` is shared. */
  blobs?: BlobStore;
  /** Total bytes of cache files before LRU eviction. */
  budgetBytes: number;
  /** Driver version: part of every key; embedded, a change empties the map and the files. */
  version: string;
}

/** Default budget: 1 GiB of cache files. */
export const DEFAULT_CACHE_BUDGET = 1024 ** 3;

/** The persistent cache of prepared models. */

/**
 * How old a shared save's blobs no map entry names must be before a sweep removes them: a
 * save takes far less between storing its blobs and naming them.
 */
export const ORPHAN_GRACE_MS = 10 * 60 * 1000;

/** A new generation name: when it was made (a sweep reads it), then a random part. */
function newGeneration(): string {
  return `${Date.now()}-${crypto.randomUUID()}`;
}

/** When a cache blob's generation was made (`cache/<key>-<ms>-<uuid>/<hash>`), if it says. */
function generationTime(blob: string): number | undefined {
  const time = /^cache\/[0-9a-f]+-(\d{13})-[0-9a-f-]+\//.exec(blob);
  return time ? Number(time[1]) : undefined;
}
export class CompilationCache {
  readonly #kv: StateStore;
  readonly #dir: string;
  /** The blob store of a shared cache; undefined when embedded (files in `#dir`). */
  readonly #blobs: BlobStore | undefined;
  readonly #budget: number;
  readonly version: string;
  /** Whether replicas share the cache (its entries are blobs every replica reads). */
  get shared(): boolean {
    return this.#blobs !== undefined;
  }

  /** Per key, one operation at a time, so one key's loads and saves never interleave. */
  readonly #turns = new KeyedTurns();

  private constructor(config: CacheConfig) {
    if (config.kv.shared && !config.blobs) {
      throw new TypeError("a compilation cache on a shared state store needs a blob store");
    }
    this.#kv = config.kv;
    this.#dir = config.dir;
    this.#blobs = config.kv.shared ? config.blobs : undefined;
    this.#budget = config.budgetBytes;
    this.version = config.version;
  }

  /**
   * Opens the cache. Embedded, a different driver version than last time resets map and
   * files; shared, nothing is reset (see the module's doc) and the directory is not used.
   */
  static async open(config: CacheConfig): Promise<CompilationCache> {
    const cache = new CompilationCache(config);
    if (cache.#blobs) return cache;
    await Deno.mkdir(config.dir, { recursive: true });
    const stored = await config.kv.get<string>(["cache_version"]);
    if (stored.value !== config.version) {
      await cache.clear();
      await config.kv.set(["cache_version"], config.version);
    }
    // Files of saves a crash interrupted before the map named them: this process alone
    // writes the directory, and nothing is saving yet.
    await cache.sweepOrphans();
    return cache;
  }

  /**
   * Removes what saves a crash interrupted left and no map entry names: embedded, every such
   * file (call it before anything saves); shared, such blobs once their generation is older
   * than {@link ORPHAN_GRACE_MS} (younger ones may be a save in flight on another replica).
   * The number removed.
   */
  async sweepOrphans(now = Date.now()): Promise<number> {
    const named = new Set<string>();
    for await (const e of this.#kv.list<CacheEntry>({ prefix: ["cache"] })) {
      const { generation, blobs } = e.value;
      const files = this.#files(String(e.key[1]), generation);
      for (const name of blobs ? [blobs.model, blobs.data] : [files.model, files.data]) {
        named.add(name);
      }
    }
    const doomed: string[] = [];
    if (!this.#blobs) {
      for await (const e of Deno.readDir(this.#dir)) {
        const path = `${this.#dir}/${e.name}`;
        if (e.isFile && /\.(model|data)$/.test(e.name) && !named.has(path)) doomed.push(path);
      }
      for (const path of doomed) await removeIfPresent(path);
      return doomed.length;
    }
    for await (const blob of this.#blobs.list("cache/")) {
      const storedAt = generationTime(blob);
      if (named.has(blob) || storedAt === undefined || now - storedAt <= ORPHAN_GRACE_MS) continue;
      doomed.push(blob);
    }
    for (const blob of doomed) await this.#blobs.delete(blob).catch(() => {});
    return doomed.length;
  }

  /**
   * The cache key: SHA-256 over everything that decides the prepared model, including the
   * client (one client's token never selects another's cache) and the driver version.
   */
  async key(parts: Record<string, unknown>): Promise<string> {
    const text = JSON.stringify({ ...parts, version: this.version });
    return await sha256Hex(new TextEncoder().encode(text));
  }

  /**
   * Runs `run` holding the key's preparation lock on every process that shares the state
   * store: of replicas preparing one key at once, one does while the others wait, then find
   * the entry it saved. Embedded, it keeps this process's preparations of a key apart.
   */
  exclusive<T>(key: string, run: () => Promise<T>): Promise<T> {
    return this.#kv.withLock(`prepare:${key}`, run);
  }

  #files(key: string, generation: string): { model: string; data: string } {
    return cacheFiles(this.#dir, key, generation);
  }

  /** Looks a key up; any doubt about the files or blobs is a rejection, never an error. */
  load(key: string): Promise<CacheLookup> {
    const blobs = this.#blobs;
    return this.#turns.run(
      key,
      () => blobs ? this.#loadBlobs(key, blobs) : this.#loadFiles(key),
    );
  }

  async #loadFiles(key: string): Promise<CacheLookup> {
    const found = await this.#kv.get<CacheEntry>(["cache", key]);
    const entry = found.value;
    if (!entry) {
      const orphans = await this.#filesOf(key);
      if (orphans.length > 0) {
        await Promise.all(orphans.map((f) => removeIfPresent(`${this.#dir}/${f}`)));
        return { kind: "rejected", reason: "cache files without a map entry" };
      }
      return { kind: "miss" };
    }
    const files = this.#files(key, entry.generation);
    const header = dataHeader(key, entry.generation);
    let model: Uint8Array;
    try {
      model = await Deno.readFile(files.model);
    } catch {
      await this.#removeIf(key, entry.generation);
      return { kind: "rejected", reason: "cache file missing" };
    }
    if (await sha256Hex(model) !== entry.modelHash) {
      await this.#removeIf(key, entry.generation);
      return { kind: "rejected", reason: "model cache does not match its recorded hash" };
    }
    if (!readData(files.data, header, entry.dataBytes, false)) {
      await this.#removeIf(key, entry.generation);
      return {
        kind: "rejected",
        reason: "data cache does not have its recorded size and header",
      };
    }
    await this.#touch(found, entry);
    const data: DataCacheHandle = {
      size: entry.dataBytes,
      read: () => readData(files.data, header, entry.dataBytes, true),
    };
    return { kind: "hit", model, data };
  }

  /** A shared lookup: both blobs read now (so checked), the data cache into shared memory. */
  async #loadBlobs(key: string, store: BlobStore): Promise<CacheLookup> {
    let found = await this.#kv.get<CacheEntry>(["cache", key]);
    for (let looks = 1;; looks++) {
      const entry = found.value;
      if (!entry) return { kind: "miss" };
      if (!entry.blobs) {
        await this.#removeIf(key, entry.generation);
        return { kind: "rejected", reason: "cache entry without blobs (copied from a data dir)" };
      }
      const read = (what: string, blob: string) =>
        store.get(blob).catch((error: Error) => {
          throw new Error(`${what} blob: ${error.message}`);
        });
      let model: Uint8Array, data: Uint8Array;
      try {
        [model, data] = await Promise.all([
          read("model cache", entry.blobs.model),
          read("data cache", entry.blobs.data),
        ]);
      } catch (error) {
        // Another replica may just have replaced or evicted the entry and deleted its blobs.
        const now = await this.#kv.get<CacheEntry>(["cache", key]);
        if (looks === 1 && now.value?.generation !== entry.generation) {
          found = now;
          continue;
        }
        await this.#removeIf(key, entry.generation);
        return { kind: "rejected", reason: (error as Error).message };
      }
      if (data.byteLength !== entry.dataBytes) {
        await this.#removeIf(key, entry.generation);
        return { kind: "rejected", reason: "data cache does not have its recorded size" };
      }
      await this.#touch(found, entry);
      const shared = new Uint8Array(new SharedArrayBuffer(data.byteLength));
      shared.set(data);
      return { kind: "hit", model, data: { size: shared.byteLength, read: () => shared } };
    }
  }

  /**
   * Refreshes an entry's last use (at most every {@link LAST_USED_RESOLUTION_MS}, to keep
   * hits cheap), only if it is still the entry read: one replaced meanwhile, its files or
   * blobs deleted, must not come back.
   */
  async #touch(found: StateEntryMaybe<CacheEntry>, entry: CacheEntry): Promise<void> {
    const now = Date.now();
    if (now - entry.lastUsed <= LAST_USED_RESOLUTION_MS) return;
    await this.#kv.atomic().check(found).set(found.key, { ...entry, lastUsed: now }).commit();
  }

  /**
   * Saves payloads under a key: hashes the in-memory bytes, writes both (files atomically,
   * or blobs) under a new generation, then points the map at them and drops what the entry
   * it replaced stored. Shared, run it within {@link exclusive} of the key, as the compiler
   * does, or replicas may prepare the key twice.
   */
  async save(key: string, model: Uint8Array, data: Uint8Array): Promise<void> {
    await this.#turns.run(key, async () => {
      const generation = newGeneration();
      const entry: CacheEntry = {
        generation,
        modelHash: await sha256Hex(model),
        dataBytes: data.byteLength,
        bytes: model.byteLength + data.byteLength,
        lastUsed: Date.now(),
      };
      if (!this.#blobs) {
        const files = this.#files(key, generation);
        await writeFileAtomic(files.data, dataHeader(key, generation), data);
        await writeFileAtomic(files.model, model);
        await this.#point(key, entry);
        return;
      }
      const scope = blobScope(key, generation);
      const [modelBlob, dataBlob] = await Promise.all([
        this.#blobs.put(scope, [model]),
        this.#blobs.put(scope, [data]),
      ]);
      entry.blobs = { model: modelBlob, data: dataBlob };
      try {
        await this.#point(key, entry);
      } catch (error) {
        await this.#deleteStored(key, entry);
        throw error;
      }
    });
    // Outside this key's turn: eviction takes each victim's own turn, so it never removes
    // files under a load of that key, and two keys' saves never wait on each other.
    await this.#evict(key);
  }

  /**
   * Points the map's entry of `key` at `entry`, replacing whatever is there in one checked
   * commit, then deletes what the replaced entry stored (no longer named by the map).
   */
  async #point(key: string, entry: CacheEntry): Promise<void> {
    for (;;) {
      const previous = await this.#kv.get<CacheEntry>(["cache", key]);
      const { ok } = await this.#kv.atomic().check(previous).set(["cache", key], entry).commit();
      if (!ok) continue; // another replica wrote the entry meanwhile: replace that one
      if (previous.value) await this.#deleteStored(key, previous.value);
      return;
    }
  }

  /** Deletes a key's entry and files or blobs (safe while another request reads them). */
  delete(key: string): Promise<void> {
    return this.#turns.run(key, async () => {
      const entry = (await this.#kv.get<CacheEntry>(["cache", key])).value;
      if (entry) await this.#removeIf(key, entry.generation);
    });
  }

  /** Entries and bytes in the cache. */
  async stats(): Promise<{ entries: number; bytes: number }> {
    let entries = 0, bytes = 0;
    for await (const e of this.#kv.list<CacheEntry>({ prefix: ["cache"] })) {
      entries++;
      bytes += e.value.bytes;
    }
    return { entries, bytes };
  }

  async #filesOf(key: string): Promise<string[]> {
    const names: string[] = [];
    for await (const e of Deno.readDir(this.#dir)) {
      if (e.name.startsWith(`${key}-`)) names.push(e.name);
    }
    return names;
  }

  /**
   * Deletes what an entry no longer in the map stored: its blobs (shared; one that cannot
   * be deleted now is only garbage, so it is reported, not thrown), or its files.
   */
  async #deleteStored(key: string, entry: CacheEntry): Promise<void> {
    if (!this.#blobs) {
      const files = this.#files(key, entry.generation);
      await removeIfPresent(files.model);
      await removeIfPresent(files.data);
      return;
    }
    // An entry without blobs was copied from a data dir: its files are on another disk.
    for (const blob of entry.blobs ? [entry.blobs.model, entry.blobs.data] : []) {
      await this.#blobs.delete(blob).catch((error: Error) => {
        console.warn(`nnserve: could not delete compilation cache blob ${blob}: ${error.message}`);
      });
    }
  }

  /**
   * Removes the entry of `key` if it still has `generation`, in a commit checked against the
   * entry read, then what it stored: an entry another replica replaced meanwhile stays.
   */
  async #removeIf(key: string, generation: string): Promise<void> {
    for (;;) {
      const current = await this.#kv.get<CacheEntry>(["cache", key]);
      if (current.value?.generation !== generation) return;
      const { ok } = await this.#kv.atomic().check(current).delete(["cache", key]).commit();
      if (!ok) continue; // its last use was refreshed, or it was replaced: look again
      await this.#deleteStored(key, current.value);
      return;
    }
  }

  /** Evicts least recently used entries (never `keep`) until the budget holds. */
  async #evict(keep: string): Promise<void> {
    const all: { key: string; entry: CacheEntry }[] = [];
    let total = 0;
    for await (const e of this.#kv.list<CacheEntry>({ prefix: ["cache"] })) {
      all.push({ key: String(e.key[1]), entry: e.value });
      total += e.value.bytes;
    }
    all.sort((a, b) => a.entry.lastUsed - b.entry.lastUsed);
    for (const { key, entry } of all) {
      if (total <= this.#budget) break;
      if (key === keep) continue;
      await this.#turns.run(key, () => this.#removeIf(key, entry.generation));
      total -= entry.bytes;
    }
  }

  /** Empties the map and the directory (shared: the map and the cache's blobs). */
  async clear(): Promise<void> {
    for await (const e of this.#kv.list<CacheEntry>({ prefix: ["cache"] })) {
      await this.#removeIf(String(e.key[1]), e.value.generation);
    }
    if (this.#blobs) {
      for await (const blob of this.#blobs.list("cache/")) await this.#blobs.delete(blob);
      return;
    }
    for await (const e of Deno.readDir(this.#dir)) {
      if (e.isFile) await removeIfPresent(`${this.#dir}/${e.name}`);
    }
  }
}
