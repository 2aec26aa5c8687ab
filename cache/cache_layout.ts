/**
 * How the compilation cache stores an entry: the map entry's shape, the embedded mode's files
 * (named by key and generation, the data cache behind a header naming both) and the shared
 * mode's blob scope. `deno task migrate` turns a data dir's entries into shared ones here.
 */
import type { BlobStore } from "../store/blob_store.ts";
import { sha256Hex } from "../store/bytes.ts";

/** What the map stores per cache key. */
export interface CacheEntry {
  generation: string;
  modelHash: string;
  dataBytes: number;
  bytes: number;
  lastUsed: number;
  /**
   * Shared: the blob keys of the model and data caches. Embedded entries have none (their
   * files are named by key and generation); a shared map rejects an entry without them.
   */
  blobs?: { model: string; data: string };
}

/** Size of the data cache header: the entry's key and generation, padded. */
export const DATA_HEADER_BYTES = 128;

/** The header binding a data cache file to its map entry. */
export function dataHeader(key: string, generation: string): Uint8Array {
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
export function readData(
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

/** The files of an embedded entry. */
export function cacheFiles(
  dir: string,
  key: string,
  generation: string,
): { model: string; data: string } {
  const base = `${dir}/${key}-${generation}`;
  return { model: `${base}.model`, data: `${base}.data` };
}

/** The blob scope of a shared entry: its own per generation, so no two saves share a key. */
export function blobScope(key: string, generation: string): string {
  return `cache/${key}-${generation}`;
}

/**
 * An embedded entry (files in `dir`) as a shared one: its files checked as a lookup checks
 * them (the model cache's hash, the data cache's header and size), their bytes put into
 * `blobs`; undefined when the files are gone or do not match (the entry is then dropped).
 */
export async function sharedEntry(
  dir: string,
  key: string,
  entry: CacheEntry,
  blobs: BlobStore,
): Promise<CacheEntry | undefined> {
  const files = cacheFiles(dir, key, entry.generation);
  const model = await Deno.readFile(files.model).catch(() => null);
  if (!model || await sha256Hex(model) !== entry.modelHash) return undefined;
  const data = readData(files.data, dataHeader(key, entry.generation), entry.dataBytes, true);
  if (!data) return undefined;
  const scope = blobScope(key, entry.generation);
  const [modelBlob, dataBlob] = [
    await blobs.put(scope, [model]),
    await blobs.put(scope, [data.slice()]),
  ];
  return { ...entry, blobs: { model: modelBlob, data: dataBlob } };
}
