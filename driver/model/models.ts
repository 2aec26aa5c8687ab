/**
 * Registered models: validation at registration (constants copied out of memory pools),
 * the canonical stored form, and loading — reading the stored files, checking their
 * checksum and validating again, as a driver's `prepareModel` does with the model it gets.
 */
import { sha256Hex } from "../../store/bytes.ts";
import type { StateEntry, StateEntryMaybe } from "../../store/state_store.ts";
import type { MemoryPools } from "../../memory/pools.ts";
import { checkRegion } from "../../memory/pools.ts";
import {
  type ModelRecord,
  type ModelStore,
  type OnnxImport,
  type StoredModel,
} from "../../store/model_store.ts";
import { DriverError, invalid, notFound } from "../../nnapi/errors.ts";
import { buildModel, type Model, type PoolResolver } from "./model.ts";
import { canonicalDocument, inlineDocument, WEIGHTS_POOL } from "./stored_document.ts";
import { type ModelJson, ModelSchema } from "./model_schema.ts";

/** Where a model came from, beyond its NNAPI form. */
export interface ModelSource {
  name?: string;
  /** Its version under `name` ("1" when a name comes without one). */
  version?: string;
  /** The model repository's hash of the files it came from. */
  repository?: string;
  onnx?: OnnxImport;
}

/** What a client sees of a model. */
export type ModelInfo = Omit<ModelRecord, "owner" | "deleted" | "blobs">;

/** The client-visible part of a record. */
export function publicModel(record: ModelRecord): ModelInfo {
  const { owner: _owner, deleted: _deleted, blobs: _blobs, ...rest } = record;
  return rest;
}

/**
 * How large a model may be (NNSERVE_MAX_OPERANDS, NNSERVE_MAX_OPERATIONS,
 * NNSERVE_MAX_TENSOR_ELEMENTS): operands and operations over all its graphs, and the elements
 * of any one operand.
 */
export interface ModelLimits {
  maxOperands: number;
  maxOperations: number;
  maxTensorElements: number;
  /** Models one client may have (NNSERVE_MAX_MODELS_PER_CLIENT). */
  maxModelsPerClient: number;
}

/** Defaults of {@link ModelLimits}: far above real models (MobileNetV2 has 270 operands). */
export const DEFAULT_MODEL_LIMITS: ModelLimits = {
  maxOperands: 200_000,
  maxOperations: 100_000,
  maxTensorElements: 2 ** 28,
  maxModelsPerClient: 1000,
};

/** Refuses (413) a model past the limits, before any of its validation work is done. */
function checkModelLimits(json: ModelJson, limits: ModelLimits): void {
  const graphs = [json, ...(json.referenced ?? [])];
  const count = (key: "operands" | "operations") => graphs.reduce((n, g) => n + g[key].length, 0);
  const refuse = (what: string, variable: string) => {
    throw new DriverError(
      "RESOURCE_EXHAUSTED_PERSISTENT",
      `the model has ${what}, over this service's limit (${variable})`,
      { limit: "model_size" },
    );
  };
  const operands = count("operands"), operations = count("operations");
  if (operands > limits.maxOperands) {
    refuse(`${operands} operands`, `NNSERVE_MAX_OPERANDS=${limits.maxOperands}`);
  }
  if (operations > limits.maxOperations) {
    refuse(`${operations} operations`, `NNSERVE_MAX_OPERATIONS=${limits.maxOperations}`);
  }
  for (const graph of graphs) {
    for (const [i, operand] of graph.operands.entries()) {
      const elements = (operand.dimensions ?? []).reduce((n, d) => n * Math.max(d, 1), 1);
      if (elements > limits.maxTensorElements) {
        refuse(
          `operand ${i} of ${elements} elements`,
          `NNSERVE_MAX_TENSOR_ELEMENTS=${limits.maxTensorElements}`,
        );
      }
    }
  }
}

/** Registers, finds and loads models of all clients. */
export class Models {
  readonly #store: ModelStore;
  readonly #memories: MemoryPools;
  readonly #limits: ModelLimits;

  constructor(store: ModelStore, memories: MemoryPools, limits: Partial<ModelLimits> = {}) {
    this.#store = store;
    this.#memories = memories;
    this.#limits = { ...DEFAULT_MODEL_LIMITS, ...limits };
  }

  /** Validates and stores a model; `source` names it and its ports (imports). */
  async register(owner: string, json: ModelJson, source: ModelSource = {}): Promise<ModelRecord> {
    checkModelLimits(json, this.#limits);
    const pools = await Promise.all((json.pools ?? []).map((id) => this.#memories.get(owner, id)));
    // Constants are copied out of the pools here: deleting or rewriting a memory later
    // cannot change a registered model.
    const resolvePool: PoolResolver = (poolIndex, offset, length) => {
      const pool = pools[poolIndex];
      if (!pool) throw invalid(`pool index ${poolIndex} is not in pools (${pools.length})`);
      checkRegion(pool.size, offset, length, `pools[${poolIndex}]`);
      return pool.bytes.slice(offset, offset + length);
    };
    const model = buildModel(json, { resolvePool });
    const stored = canonicalDocument(json, model);
    const describe = (names: string[] | undefined) => (operand: number, k: number) => {
      const { type, dimensions, scale, zeroPoint } = json.operands[operand];
      return {
        operand,
        type,
        dimensions,
        ...(type.includes("QUANT") ? { scale: scale ?? 0, zeroPoint: zeroPoint ?? 0 } : {}),
        ...(names ? { name: names[k] } : {}),
      };
    };
    const record: ModelRecord = {
      id: crypto.randomUUID(),
      owner,
      checksum: await sha256Hex(stored.document, stored.weights),
      createdAt: new Date().toISOString(),
      byteSize: stored.document.byteLength + stored.weights.byteLength,
      halVersion: model.halVersion,
      operandCount: model.operands.length,
      operationCount: model.operations.length,
      inputs: model.inputIndexes.map(describe(source.onnx?.inputs.map((p) => p.name))),
      outputs: model.outputIndexes.map(describe(source.onnx?.outputs.map((p) => p.name))),
      ...(source.name === undefined ? {} : { name: source.name, version: source.version ?? "1" }),
      ...(source.repository === undefined ? {} : { repository: source.repository }),
      ...(source.onnx ? { onnx: source.onnx } : {}),
    };
    await this.#store.save(record, stored, this.#limits.maxModelsPerClient);
    return record;
  }

  /** A model record of this client; deleted ones only when asked for. */
  async record(owner: string, id: string, includeDeleted = false): Promise<ModelRecord> {
    const record = await this.#store.get(owner, id);
    if (!record || (record.deleted && !includeDeleted)) throw notFound(`no model ${id}`);
    return record;
  }

  /** A page of this client's models, by name and version when given. */
  /** The client's visible models named `name` (every version). */
  async named(owner: string, name: string): Promise<ModelInfo[]> {
    return (await this.#store.named(owner, name)).map(publicModel);
  }

  async list(
    owner: string,
    query: { name?: string; version?: string; limit: number; cursor?: string },
  ): Promise<{ models: ModelInfo[]; next?: string }> {
    const { items, next } = await this.#store.list(owner, query);
    return { models: items.map(publicModel), ...(next ? { next } : {}) };
  }

  /** Reads, checks and validates a stored model. */
  async load(record: ModelRecord): Promise<Model> {
    let stored: StoredModel;
    try {
      stored = await this.#store.load(record);
    } catch (error) {
      // Its client deleted the model (and, with no compilation yet, its files) meanwhile.
      if (!(await this.#store.get(record.owner, record.id))) {
        throw notFound(`no model ${record.id}: it was deleted while being prepared`);
      }
      throw error;
    }
    const { document, weights } = stored;
    const json = ModelSchema.parse(JSON.parse(new TextDecoder().decode(document)));
    return buildModel(json, {
      resolvePool: (poolIndex, offset, length) => {
        if (json.pools?.[poolIndex] !== WEIGHTS_POOL) {
          throw new DriverError("GENERAL_FAILURE", `stored model ${record.id} is malformed`);
        }
        return weights.subarray(offset, offset + length);
      },
    });
  }

  /** The stored model as a self-contained wire model (weights inline). */
  async wireModel(record: ModelRecord): Promise<ModelJson> {
    return inlineDocument(await this.#store.load(record));
  }

  /** A model record with its versionstamp, for the atomic steps of deletion. */
  entry(owner: string, id: string): Promise<StateEntryMaybe<ModelRecord>> {
    return this.#store.entry(owner, id);
  }

  /**
   * Deletes a model in one atomic step against `inUse`: hidden while compilations still need
   * its document, removed for good otherwise (its record returned then). A compilation saved
   * meanwhile changes the model's record, which makes the step look again, so no compilation
   * is left without it.
   */
  async delete(
    owner: string,
    id: string,
    inUse: () => Promise<boolean>,
  ): Promise<ModelRecord | undefined> {
    for (;;) {
      const entry = await this.#store.entry(owner, id);
      if (!entry.value || entry.value.deleted) throw notFound(`no model ${id}`);
      if (await inUse()) {
        if (await this.#store.markDeleted(entry as StateEntry<ModelRecord>)) return undefined;
      } else if (await this.#store.remove(entry as StateEntry<ModelRecord>)) {
        return entry.value;
      }
    }
  }

  /**
   * The named version a model's removal (`record`, from {@link delete} or {@link collect})
   * left without any model: none when the model had no name, or when another model holds its
   * name and version (a repository entry read again registers its new model before it
   * deletes the old one: the version lives on). A failed look leaves it unsaid (logged): the
   * removal stands.
   */
  async versionGone(
    owner: string,
    record: ModelRecord | undefined,
  ): Promise<{ name: string; version: string } | undefined> {
    if (record?.name === undefined) return undefined;
    const { name } = record;
    const version = record.version ?? "1";
    try {
      const others = await this.#store.named(owner, name);
      if (others.some((model) => (model.version ?? "1") === version)) return undefined;
    } catch (error) {
      console.error(
        `nnserve: could not look for other models named ${name} after a removal: ` +
          (error as Error).message,
      );
      return undefined;
    }
    return { name, version };
  }

  /**
   * Removes a model its client deleted once no compilation needs its document any more; its
   * record when it was removed.
   */
  async collect(
    owner: string,
    id: string,
    inUse: () => Promise<boolean>,
  ): Promise<ModelRecord | undefined> {
    for (;;) {
      const entry = await this.#store.entry(owner, id);
      if (!entry.value?.deleted || await inUse()) return undefined;
      if (await this.#store.remove(entry as StateEntry<ModelRecord>)) return entry.value;
    }
  }
}
