/**
 * The compilation cache (NNAPI HAL 1.2 caching, on the server). The cache directory is the
 * untrusted "app directory": anyone may overwrite its files. Security rests, as NNAPI
 * requires, on a persistent map in Deno KV from cache key to the SHA-256 of the model cache,
 * computed from the in-memory bytes before they are written; loading reads the file into
 * memory, hashes those very bytes and compares before anything is decoded (no
 * time-of-check/time-of-use gap). The data cache (weights only) is read straight into shared
 * memory and checked for its recorded size and for a header naming its key and generation
 * (so files swapped between entries are refused), not hashed: tampering with its weights
 * can change output values, never the plan. Files are written atomically under a fresh generation name that
 * only the KV entry points to, so concurrent writers, crashes mid-write and swapped files
 * never yield an accepted mix. A size budget evicts least recently used entries.
 */
import { sha256Hex } from "../store/bytes.ts";
import type { StateStore } from "../store/state_store.ts";
import { removeIfPresent, writeFileAtomic } from "../store/atomic_file.ts";

/** What the map stores per cache key. */
interface CacheEntry {
  generation: string;
  modelHash: string;
  dataBytes: number;
  bytes: number;
  lastUsed: number;
}

/** How often a hit refreshes an entry's last use (LRU order), to keep hits cheap. */
const LAST_USED_RESOLUTION_MS = 10_000;

/** Size of the data cache header: the entry's key and generation, padded. */
const DATA_HEADER_BYTES = 128;

/** The header binding a data cache file to its map entry. */
function dataHeader(key: string, generation: string): Uint8Array {
  const header = new Uint8Array(DATA_HEADER_BYTES);
  header.set(new TextEncoder().encode(`nnserve-data ${key} ${generation}`));
  return header;
}

function readFully(file: Deno.FsFile, into: Uint8Array): boolean {
  let read = 0;
  while (read < into.byteLength) {
    const n = file.readSync(into.subarray(read));
    if (n === null) return false;
    read += n;
  }
  return true;
}

/**
 * Reads a data cache file into shared memory; null unless it has exactly the expected
 * header and `size` bytes after it. Synchronous on purpose: from the page cache a blocking
 * read is several times faster than the async path (which copies through a thread pool),
 * and it holds the event loop for about a millisecond per 10 MB.
 */
function readData(
  path: string,
  header: Uint8Array,
  size: number,
  body: boolean,
): Uint8Array | null {
  let file: Deno.FsFile;
  try {
    file = Deno.openSync(path, { read: true });
  } catch {
    return null;
  }
  try {
    if (file.statSync().size !== DATA_HEADER_BYTES + size) return null;
    const found = new Uint8Array(DATA_HEADER_BYTES);
    if (!readFully(file, found) || found.some((b, i) => b !== header[i])) return null;
    if (!body) return new Uint8Array(0);
    const bytes = new Uint8Array(new SharedArrayBuffer(size));
    return readFully(file, bytes) ? bytes : null;
  } finally {
    file.close();
  }
}

/**
 * A data cache file checked for its header and size but not read yet: like a driver's
 * mmap of its cache files, the weights are read when first needed. `read` checks header
 * and size again and returns null when the file no longer matches.
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
  dir: string;
  /** Total bytes of cache files before LRU eviction. */
  budgetBytes: number;
  /** Driver version: a change empties the map, so older caches are never used. */
  version: string;
}

/** Default budget: 1 GiB of cache files. */
export const DEFAULT_CACHE_BUDGET = 1024 ** 3;

/** The persistent cache of prepared models. */
export class CompilationCache {
  readonly #kv: StateStore;
  readonly #dir: string;
  readonly #budget: number;
  readonly version: string;
  /** Per key, the operation in flight, so one key's loads and saves never interleave. */
  readonly #queues = new Map<string, Promise<unknown>>();

  private constructor(config: CacheConfig) {
    this.#kv = config.kv;
    this.#dir = config.dir;
    this.#budget = config.budgetBytes;
    this.version = config.version;
  }

  /** Opens the cache; a different driver version than last time resets map and files. */
  static async open(config: CacheConfig): Promise<CompilationCache> {
    await Deno.mkdir(config.dir, { recursive: true });
    const cache = new CompilationCache(config);
    // Temporary files of writes a crash interrupted: never referenced by the map.
    for await (const e of Deno.readDir(config.dir)) {
      if (e.isFile && e.name.endsWith(".tmp")) await removeIfPresent(`${config.dir}/${e.name}`);
    }
    const stored = await config.kv.get<string>(["cache_version"]);
    if (stored.value !== config.version) {
      await cache.clear();
      await config.kv.set(["cache_version"], config.version);
    }
    return cache;
  }

  /**
   * The cache key: SHA-256 over everything that decides the prepared model, including the
   * client (one client's token never selects another's cache) and the driver version.
   */
  async key(parts: Record<string, unknown>): Promise<string> {
    const text = JSON.stringify({ ...parts, version: this.version });
    return await sha256Hex(new TextEncoder().encode(text));
  }

  #files(key: string, generation: string): { model: string; data: string } {
    const base = `${this.#dir}/${key}-${generation}`;
    return { model: `${base}.model`, data: `${base}.data` };
  }

  #serialized<T>(key: string, run: () => Promise<T>): Promise<T> {
    const previous = this.#queues.get(key) ?? Promise.resolve();
    const next = previous.then(run, run);
    const settled = next.then(() => {}, () => {});
    this.#queues.set(key, settled);
    settled.then(() => {
      if (this.#queues.get(key) === settled) this.#queues.delete(key);
    });
    return next;
  }

  /** Looks a key up; any doubt about the files is a rejection, never an error. */
  load(key: string): Promise<CacheLookup> {
    return this.#serialized(key, async () => {
      const entry = (await this.#kv.get<CacheEntry>(["cache", key])).value;
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
        await this.#remove(key, entry);
        return { kind: "rejected", reason: "cache file missing" };
      }
      if (await sha256Hex(model) !== entry.modelHash) {
        await this.#remove(key, entry);
        return { kind: "rejected", reason: "model cache does not match its recorded hash" };
      }
      if (!readData(files.data, header, entry.dataBytes, false)) {
        await this.#remove(key, entry);
        return {
          kind: "rejected",
          reason: "data cache does not have its recorded size and header",
        };
      }
      const now = Date.now();
      if (now - entry.lastUsed > LAST_USED_RESOLUTION_MS) {
        await this.#kv.set(["cache", key], { ...entry, lastUsed: now });
      }
      const data: DataCacheHandle = {
        size: entry.dataBytes,
        read: () => readData(files.data, header, entry.dataBytes, true),
      };
      return { kind: "hit", model, data };
    });
  }

  /**
   * Saves payloads under a key: hashes the in-memory bytes, writes both files atomically
   * under a new generation, then points the map at them and drops the old generation.
   */
  async save(key: string, model: Uint8Array, data: Uint8Array): Promise<void> {
    await this.#serialized(key, async () => {
      const modelHash = await sha256Hex(model);
      const generation = crypto.randomUUID();
      const files = this.#files(key, generation);
      await writeFileAtomic(files.data, dataHeader(key, generation), data);
      await writeFileAtomic(files.model, model);
      const previous = (await this.#kv.get<CacheEntry>(["cache", key])).value;
      const entry: CacheEntry = {
        generation,
        modelHash,
        dataBytes: data.byteLength,
        bytes: model.byteLength + data.byteLength,
        lastUsed: Date.now(),
      };
      await this.#kv.set(["cache", key], entry);
      if (previous) await this.#removeFiles(key, previous.generation);
    });
    // Outside this key's turn: eviction takes each victim's own turn, so it never removes
    // files under a load of that key, and two keys' saves never wait on each other.
    await this.#evict(key);
  }

  /** Deletes a key's entry and files (safe while another request reads them). */
  delete(key: string): Promise<void> {
    return this.#serialized(key, async () => {
      const entry = (await this.#kv.get<CacheEntry>(["cache", key])).value;
      if (entry) await this.#remove(key, entry);
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

  async #removeFiles(key: string, generation: string): Promise<void> {
    const files = this.#files(key, generation);
    await removeIfPresent(files.model);
    await removeIfPresent(files.data);
  }

  async #remove(key: string, entry: CacheEntry): Promise<void> {
    await this.#kv.delete(["cache", key]);
    await this.#removeFiles(key, entry.generation);
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
      await this.#serialized(key, async () => {
        const current = (await this.#kv.get<CacheEntry>(["cache", key])).value;
        if (current?.generation === entry.generation) await this.#remove(key, current);
      });
      total -= entry.bytes;
    }
  }

  /** Empties the map and the directory. */
  async clear(): Promise<void> {
    for await (const e of this.#kv.list({ prefix: ["cache"] })) await this.#kv.delete(e.key);
    for await (const e of Deno.readDir(this.#dir)) {
      if (e.isFile) await removeIfPresent(`${this.#dir}/${e.name}`);
    }
  }
}
