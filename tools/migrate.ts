/**
 * `deno task migrate`: moves an embedded data dir's state into PostgreSQL and its model blobs
 * into the cluster's blob store, so the same service runs on them
 * (`NNSERVE_DATABASE_URL`, and `NNSERVE_S3_*` or `NNSERVE_BLOB_DIR`, read as the service
 * reads them; `NNSERVE_DATA_DIR` is the source). Every state entry is copied as it is;
 * models stored before blobs get blobs of their files, and memories' files and the
 * compilation cache's files become blobs (replicas read both from the blob store; a cache
 * entry whose files are gone or do not match is dropped). The data dir is locked meanwhile (the
 * service must not run on it), and a database that already holds state is refused: nothing
 * is overwritten.
 */
import { configFromEnv, openBlobs, StartupError } from "../server.ts";
import { type BlobStore, DirectoryBlobStore } from "../store/blob_store.ts";
import { DataDirLockedError, lockDataDir } from "../store/data_dir_lock.ts";
import type { ModelRecord } from "../store/model_store.ts";
import { MemoryBlobs } from "../memory/memory_blobs.ts";
import type { MemoryRecord } from "../memory/pools.ts";
import { type CacheEntry, sharedEntry } from "../cache/cache_layout.ts";
import { PostgresStateStore } from "../store/postgres_state.ts";
import { S3BlobStore } from "../store/s3_blob_store.ts";
import { KvStateStore, type StateStore } from "../store/state_store.ts";

/** What a migration moved. */
export interface MigrationReport {
  entries: number;
  /** Model blobs. */
  blobs: number;
  /** Memories whose files became blobs. */
  memories: number;
  /** Compilation cache entries whose files became blobs, and those dropped. */
  cacheEntries: number;
  cacheDropped: number;
  /** Models whose files became blobs. */
  filesToBlobs: number;
}

/** Copies `source`'s entries into `target` (which must hold none) and the model blobs. */
export async function migrate(options: {
  source: StateStore;
  target: StateStore;
  dataDir: string;
  sourceBlobs: BlobStore;
  targetBlobs: BlobStore;
}): Promise<MigrationReport> {
  const { source, target, dataDir, sourceBlobs, targetBlobs } = options;
  for await (const _ of target.list({ prefix: [] }, { limit: 1 })) {
    throw new Error("the database already holds state: migrate into an empty one");
  }
  const report: MigrationReport = {
    entries: 0,
    blobs: 0,
    memories: 0,
    cacheEntries: 0,
    cacheDropped: 0,
    filesToBlobs: 0,
  };
  const memories = new MemoryBlobs(target, targetBlobs);
  for await (const entry of source.list<unknown>({ prefix: [] })) {
    let value = entry.value;
    if (entry.key[0] === "model") {
      const record = value as ModelRecord;
      const scope = `models/${record.id}`;
      const [document, weights] = record.blobs
        ? [
          await sourceBlobs.get(record.blobs.document),
          await sourceBlobs.get(record.blobs.weights),
        ]
        : [
          await Deno.readFile(`${dataDir}/models/${record.id}.json`),
          await Deno.readFile(`${dataDir}/models/${record.id}.weights`),
        ];
      if (!record.blobs) report.filesToBlobs++;
      const blobs = {
        document: await targetBlobs.put(scope, [document]),
        weights: await targetBlobs.put(scope, [weights]),
      };
      report.blobs += 2;
      value = { ...record, blobs };
    } else if (entry.key[0] === "memory") {
      const record = value as MemoryRecord;
      // A memory deleted while held has no file left; recovery removes its record.
      if (!record.deleted) {
        const bytes = await Deno.readFile(`${dataDir}/memories/${record.id}.bin`);
        value = { ...record, blocks: await memories.store(record.id, bytes) };
        report.memories++;
      }
    } else if (entry.key[0] === "cache" && entry.key.length === 2) {
      const shared = await sharedEntry(
        `${dataDir}/cache`,
        String(entry.key[1]),
        value as CacheEntry,
        targetBlobs,
      );
      if (!shared) {
        report.cacheDropped++;
        continue;
      }
      value = shared;
      report.cacheEntries++;
    }
    await target.set(entry.key, value);
    report.entries++;
  }
  return report;
}

if (import.meta.main) {
  try {
    const config = configFromEnv();
    const dataDir = config.dataDir;
    if (config.databaseUrl === undefined) {
      throw new StartupError("NNSERVE_DATABASE_URL names the database to migrate into");
    }
    const lock = await lockDataDir(dataDir).catch((error) => {
      throw error instanceof DataDirLockedError ? new StartupError(error.message) : error;
    });
    const source = await KvStateStore.open(config.kvPath ?? `${dataDir}/nnserve.kv`);
    const target = await PostgresStateStore.open(config.databaseUrl);
    const targetBlobs = openBlobs(config);
    try {
      const report = await migrate({
        source,
        target,
        dataDir,
        sourceBlobs: new DirectoryBlobStore(`${dataDir}/blobs`),
        targetBlobs,
      });
      console.log(
        `nnserve migrate: ${report.entries} state entries, ${report.blobs} model blobs ` +
          `(${report.filesToBlobs} models from files), ${report.memories} memories and ` +
          `${report.cacheEntries} compilation cache entries moved from ${dataDir}` +
          (report.cacheDropped
            ? ` (${report.cacheDropped} cache entries with bad files dropped)`
            : ""),
      );
    } finally {
      source.close();
      await target.close();
      if (targetBlobs instanceof S3BlobStore) targetBlobs.close();
      lock.release();
    }
  } catch (error) {
    console.error(`nnserve migrate: ${(error as Error).message}`);
    Deno.exit(1);
  }
}
