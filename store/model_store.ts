/**
 * Persistent registered models: metadata in Deno KV (small values), the canonical model
 * document and its weights blob in files under the data directory (constants can be far
 * above KV's 64 KiB value limit). The SHA-256 of document and weights is kept in KV and
 * checked on every load.
 */
import { sha256Hex } from "./bytes.ts";
import type { StateEntry, StateEntryMaybe, StateKey, StateStore } from "./state_store.ts";
import { DriverError } from "../nnapi/errors.ts";
import { removeIfPresent } from "./atomic_file.ts";
import type { BlobStore } from "./blob_store.ts";
import { listPage, type Page, readMany } from "./kv_pages.ts";
import { countValues, kvCounter, quotaReached } from "./kv_counters.ts";

/** Metadata of a registered model, as stored and as `GET /v1/models/{id}` reports it. */
/**
 * A model input or output: its operand, its quantization when quantized, and for imported
 * models its source name.
 */
export interface ModelPort {
  operand: number;
  type: string;
  dimensions: number[];
  scale?: number;
  zeroPoint?: number;
  name?: string;
}

/** An ONNX value as the imported file declares it. */
export interface OnnxPort {
  name: string;
  elementType: string;
  shape: (number | string)[];
}

/** How an ONNX file became this model. */
export interface OnnxImport {
  opset: number;
  layout: string;
  notes: string[];
  inputs: OnnxPort[];
  outputs: OnnxPort[];
}

export interface ModelRecord {
  id: string;
  owner: string;
  checksum: string;
  createdAt: string;
  byteSize: number;
  halVersion: string;
  operandCount: number;
  operationCount: number;
  inputs: ModelPort[];
  outputs: ModelPort[];
  /** The name the client gave it (`?name=`). */
  name?: string;
  /** Its version under that name (`?version=`; "1" when a name came without one). */
  version?: string;
  /** For models of the model repository: the SHA-256 of the files it was loaded from. */
  repository?: string;
  /** What an ONNX import converted (opset, layout, ONNX types and shapes, notes). */
  onnx?: OnnxImport;
  /** Set when the client deleted it while compilations still need it. */
  deleted?: boolean;
  /** The blobs of its document and weights (models stored before blobs have files). */
  blobs?: { document: string; weights: string };
}

/** A stored model's two files' contents. */
export interface StoredModel {
  document: Uint8Array;
  weights: Uint8Array;
}

/** The KV key of a model's record. */
export function modelKey(owner: string, id: string): StateKey {
  return ["model", owner, id];
}

/** The KV key that finds a named model by client, name and version. */
function nameKey(record: ModelRecord): StateKey {
  return ["model_name", record.owner, record.name!, record.version!, record.id];
}

/** Set once every named model of the store has its name key (stores from before them). */
const NAME_INDEX_BUILT: StateKey = ["model_name_index_built"];

/** The KV key of a client's model count. */
function modelCountKey(owner: string): StateKey {
  return ["model_count", owner];
}

/** Models of all clients, keyed by owner and id. */
export class ModelStore {
  readonly #kv: StateStore;
  /** Where models stored before blobs keep their files. */
  readonly #dir: string;
  readonly #blobs: BlobStore;
  /** The name index of a store from before it, built on first use. */
  #nameIndex?: Promise<void>;

  constructor(kv: StateStore, dataDir: string, blobs: BlobStore) {
    this.#kv = kv;
    this.#dir = `${dataDir}/models`;
    this.#blobs = blobs;
  }

  #file(id: string, part: "json" | "weights"): string {
    return `${this.#dir}/${id}.${part}`;
  }

  /** The client's count of models it can see (not deleted). */
  #count(owner: string): Promise<StateEntry<number>> {
    return kvCounter(
      this.#kv,
      modelCountKey(owner),
      () => countValues<ModelRecord>(this.#kv, ["model", owner], (r) => !r.deleted),
    );
  }

  /**
   * Stores the blobs first, then the metadata (so metadata never dangles), counting the
   * model in the same commit; a client at `limit` models is refused (its blobs removed).
   */
  async save(record: ModelRecord, model: StoredModel, limit = Infinity): Promise<void> {
    const refuse = () => quotaReached("models", limit, "NNSERVE_MAX_MODELS_PER_CLIENT");
    if ((await this.#count(record.owner)).value >= limit) throw refuse();
    const scope = `models/${record.id}`;
    const blobs = {
      document: await this.#blobs.put(scope, [model.document]),
      weights: await this.#blobs.put(scope, [model.weights]),
    };
    for (;;) {
      const count = await this.#count(record.owner);
      if (count.value >= limit) {
        await this.#removeBlobs(blobs);
        throw refuse();
      }
      const commit = this.#kv.atomic()
        .check(count)
        .set(modelKey(record.owner, record.id), { ...record, blobs })
        .set(count.key, count.value + 1);
      if (record.name !== undefined) commit.set(nameKey(record), true);
      if ((await commit.commit()).ok) return;
    }
  }

  /** The record, or null when absent (deleted records are returned; callers decide). */
  async get(owner: string, id: string): Promise<ModelRecord | null> {
    return (await this.entry(owner, id)).value;
  }

  /** A page of this client's models (not deleted), by name and version when given. */
  list(
    owner: string,
    query: { name?: string; version?: string; limit: number; cursor?: string },
  ): Promise<Page<ModelRecord>> {
    const { name, version, limit, cursor } = query;
    return listPage<ModelRecord>(this.#kv, ["model", owner], {
      keep: (r) =>
        !r.deleted && (name === undefined || r.name === name) &&
        (version === undefined || r.version === version),
      limit,
      cursor,
    });
  }

  /** The client's visible models named `name`, any version, found by the name index. */
  async named(owner: string, name: string): Promise<ModelRecord[]> {
    await (this.#nameIndex ??= this.#buildNameIndex());
    const keys: StateKey[] = [];
    for await (const entry of this.#kv.list({ prefix: ["model_name", owner, name] })) {
      keys.push(modelKey(owner, String(entry.key[4])));
    }
    return (await readMany<ModelRecord>(this.#kv, keys)).filter((r) => !r.deleted);
  }

  /** Gives every named model of a store from before the name index its name key, once. */
  async #buildNameIndex(): Promise<void> {
    if ((await this.#kv.get(NAME_INDEX_BUILT)).versionstamp !== null) return;
    for await (const entry of this.#kv.list<ModelRecord>({ prefix: ["model"] })) {
      const record = entry.value;
      if (record.name !== undefined && !record.deleted) {
        await this.#kv.set(nameKey(record), true);
      }
    }
    await this.#kv.set(NAME_INDEX_BUILT, true);
  }

  /** The record with its versionstamp, for atomic steps that depend on it. */
  entry(owner: string, id: string): Promise<StateEntryMaybe<ModelRecord>> {
    return this.#kv.get<ModelRecord>(modelKey(owner, id));
  }

  /** Reads the blobs (or a model's files) and checks the bytes against the checksum. */
  async load(record: ModelRecord): Promise<StoredModel> {
    let model: StoredModel;
    try {
      model = record.blobs
        ? {
          document: await this.#blobs.get(record.blobs.document),
          weights: await this.#blobs.get(record.blobs.weights),
        }
        : {
          document: await Deno.readFile(this.#file(record.id, "json")),
          weights: await Deno.readFile(this.#file(record.id, "weights")),
        };
    } catch (error) {
      if (error instanceof DriverError && error.status === "GENERAL_FAILURE") throw error;
      throw new DriverError(
        "GENERAL_FAILURE",
        `the stored document of model ${record.id} is missing`,
      );
    }
    if (await sha256Hex(model.document, model.weights) !== record.checksum) {
      throw new DriverError(
        "GENERAL_FAILURE",
        `the stored document of model ${record.id} does not match its checksum`,
      );
    }
    return model;
  }

  /**
   * Hides a model from its client while compilations still reference it; false when the
   * record changed since `entry` was read (a compilation of it was saved meanwhile).
   */
  async markDeleted(entry: StateEntry<ModelRecord>): Promise<boolean> {
    const { key, value } = entry;
    const count = await this.#count(value.owner);
    const commit = this.#kv.atomic()
      .check(entry, count)
      .set(key, { ...value, deleted: true })
      .set(count.key, Math.max(0, count.value - 1));
    if (value.name !== undefined) commit.delete(nameKey(value));
    return (await commit.commit()).ok;
  }

  /**
   * Removes the metadata, then the document, unless the record changed since `entry` was
   * read; false in that case.
   */
  async remove(entry: StateEntry<ModelRecord>): Promise<boolean> {
    // A model marked deleted was uncounted then; a visible one is uncounted now.
    const count = await this.#count(entry.value.owner);
    const commit = this.#kv.atomic().check(entry, count).delete(entry.key);
    if (!entry.value.deleted) commit.set(count.key, Math.max(0, count.value - 1));
    if (entry.value.name !== undefined) commit.delete(nameKey(entry.value));
    if (!(await commit.commit()).ok) return false;
    if (entry.value.blobs) await this.#removeBlobs(entry.value.blobs);
    await removeIfPresent(this.#file(entry.value.id, "json"));
    await removeIfPresent(this.#file(entry.value.id, "weights"));
    return true;
  }

  async #removeBlobs(blobs: { document: string; weights: string }): Promise<void> {
    await this.#blobs.delete(blobs.document);
    await this.#blobs.delete(blobs.weights);
  }
}
