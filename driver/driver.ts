/**
 * The NNAPI driver as a service: registers models, prepares compilations and runs
 * executions for clients (owners), on its devices. It knows nothing of HTTP; every failure
 * is a DriverError with an NNAPI status.
 */
import type { CompilationRecord } from "../store/compilation_store.ts";
import { CompilationStore } from "../store/compilation_store.ts";
import { type ModelRecord, ModelStore, sha256Hex } from "../store/model_store.ts";
import { createCpuDevice, type Device, type DeviceInfo } from "./devices.ts";
import { DriverError, invalid, notFound } from "./errors.ts";
import {
  checkOutputArguments,
  checkOutputShapes,
  type ExecutionRequest,
  type ExecutionResult,
  resolveInputs,
} from "./execution.ts";
import { ExecutorPool } from "./executor_pool.ts";
import { Metrics } from "./metrics.ts";
import { buildModel, type Model, type PoolResolver } from "./model.ts";
import { canonicalDocument } from "./model_document.ts";
import { type ModelJson, ModelSchema } from "./model_schema.ts";
import { type PreparedModel, prepareModel } from "./prepared_model.ts";

/** Where the driver keeps state and how much parallelism it uses. */
export interface DriverConfig {
  kv: Deno.Kv;
  dataDir: string;
  /** Executor workers (parallel executions). */
  workers: number;
}

/** A compilation request after boundary validation. */
export interface CompilationRequest {
  model: string;
  preference?: CompilationRecord["preference"];
  priority?: CompilationRecord["priority"];
  devices?: string[];
  deadlineMs?: number;
}

/** What a created compilation reports. */
export interface CompilationInfo {
  id: string;
  model: string;
  preference: CompilationRecord["preference"];
  priority: CompilationRecord["priority"];
  devices: string[];
  cache: "hit" | "miss" | "none";
  prepareMs: number;
}

interface LiveCompilation {
  record: CompilationRecord;
  prepared: PreparedModel;
}

function publicModel(record: ModelRecord): Omit<ModelRecord, "owner" | "deleted"> {
  const { owner: _owner, deleted: _deleted, ...rest } = record;
  return rest;
}

/** The driver: one per server process. */
export class Driver {
  readonly devices: readonly Device[];
  /** Counters of what the driver did, for `GET /metrics`. */
  readonly metrics = new Metrics();
  readonly #models: ModelStore;
  readonly #compilationStore: CompilationStore;
  readonly #pool: ExecutorPool;
  readonly #loadedModels = new Map<string, Model>();
  readonly #compilations = new Map<string, LiveCompilation>();

  constructor(config: DriverConfig) {
    this.devices = [createCpuDevice()];
    this.#models = new ModelStore(config.kv, config.dataDir);
    this.#compilationStore = new CompilationStore(config.kv);
    this.#pool = new ExecutorPool(config.workers);
    this.metrics.gauge(
      "nnserve_compilations_live",
      "Prepared compilations in memory",
      () => this.#compilations.size,
    );
    this.metrics.gauge(
      "nnserve_executions_queued",
      "Executions waiting for a worker",
      () => this.#pool.queued,
    );
  }

  /** Stops the executor workers. */
  close(): void {
    this.#pool.close();
  }

  /** Descriptions of every device. */
  deviceInfos(): DeviceInfo[] {
    return this.devices.map((d) => d.info);
  }

  /** Validates and stores a model; returns its public metadata. */
  async registerModel(
    owner: string,
    json: ModelJson,
    resolvePool?: PoolResolver,
  ): Promise<Omit<ModelRecord, "owner" | "deleted">> {
    const model = buildModel(json, { resolvePool });
    const document = canonicalDocument(json, model);
    const describe = (operand: number) => ({
      operand,
      type: json.operands[operand].type,
      dimensions: json.operands[operand].dimensions,
    });
    const record: ModelRecord = {
      id: crypto.randomUUID(),
      owner,
      checksum: await sha256Hex(document),
      createdAt: new Date().toISOString(),
      byteSize: document.byteLength,
      halVersion: model.halVersion,
      operandCount: model.operands.length,
      operationCount: model.operations.length,
      inputs: model.inputIndexes.map(describe),
      outputs: model.outputIndexes.map(describe),
    };
    await this.#models.save(record, document);
    this.#loadedModels.set(record.id, model);
    this.metrics.count("nnserve_models_registered_total", "Models registered");
    return publicModel(record);
  }

  async #modelRecord(owner: string, id: string, includeDeleted = false): Promise<ModelRecord> {
    const record = await this.#models.get(owner, id);
    if (!record || (record.deleted && !includeDeleted)) throw notFound(`no model ${id}`);
    return record;
  }

  async #loadModel(record: ModelRecord): Promise<Model> {
    const cached = this.#loadedModels.get(record.id);
    if (cached) return cached;
    const bytes = await this.#models.load(record);
    const model = buildModel(ModelSchema.parse(JSON.parse(new TextDecoder().decode(bytes))));
    this.#loadedModels.set(record.id, model);
    return model;
  }

  /** Public metadata of a model of this client. */
  async getModel(owner: string, id: string): Promise<Omit<ModelRecord, "owner" | "deleted">> {
    return publicModel(await this.#modelRecord(owner, id));
  }

  /** Deletes a model; its document stays while compilations of it exist. */
  async deleteModel(owner: string, id: string): Promise<void> {
    const record = await this.#modelRecord(owner, id);
    if (await this.#compilationStore.modelInUse(owner, id)) {
      await this.#models.markDeleted(record);
      return;
    }
    await this.#models.remove(owner, id);
    this.#loadedModels.delete(id);
  }

  #selectDevices(names: string[] | undefined): Device[] {
    if (!names || names.length === 0) return [...this.devices];
    return names.map((name, i) => {
      const device = this.devices.find((d) => d.info.name === name);
      if (!device) throw invalid(`unknown device "${name}"`, { path: ["devices", i] });
      return device;
    });
  }

  /** Per device, whether it supports each operation of the model (model order). */
  async supportedOperations(
    owner: string,
    id: string,
    deviceNames?: string[],
  ): Promise<{ name: string; supported: boolean[] }[]> {
    const devices = this.#selectDevices(deviceNames);
    const model = await this.#loadModel(await this.#modelRecord(owner, id));
    return devices.map((d) => ({ name: d.info.name, supported: d.supportedOperations(model) }));
  }

  #prepare(model: Model, record: CompilationRecord): PreparedModel {
    const devices = this.#selectDevices(record.devices);
    const support = devices.map((d) => d.supportedOperations(model));
    model.operations.forEach((op, k) => {
      if (!support.some((s) => s[k])) {
        throw invalid(
          `operation ${k} (${op.type}) is not supported by ${
            devices.map((d) => d.info.name).join(", ")
          }`,
          { path: ["operations", k] },
        );
      }
    });
    return prepareModel(model, { preference: record.preference, priority: record.priority });
  }

  /** Prepares a model for execution (NNAPI `prepareModel`). */
  async createCompilation(owner: string, request: CompilationRequest): Promise<CompilationInfo> {
    const started = performance.now();
    const model = await this.#loadModel(await this.#modelRecord(owner, request.model));
    const record: CompilationRecord = {
      id: crypto.randomUUID(),
      owner,
      model: request.model,
      preference: request.preference ?? "FAST_SINGLE_ANSWER",
      priority: request.priority ?? "MEDIUM",
      devices: request.devices ?? this.devices.map((d) => d.info.name),
      createdAt: new Date().toISOString(),
    };
    const prepared = this.#prepare(model, record);
    const prepareMs = performance.now() - started;
    if (request.deadlineMs !== undefined && prepareMs > request.deadlineMs) {
      throw new DriverError(
        "MISSED_DEADLINE_PERSISTENT",
        `preparation took ${prepareMs.toFixed(1)} ms, over the ${request.deadlineMs} ms deadline`,
      );
    }
    await this.#compilationStore.save(record);
    this.#compilations.set(record.id, { record, prepared });
    this.metrics.count("nnserve_compilations_created_total", "Compilations prepared", {
      cache: "none",
    });
    const { id, preference, priority, devices } = record;
    return { id, model: record.model, preference, priority, devices, cache: "none", prepareMs };
  }

  /** A live compilation of this client, prepared again after a restart. */
  async #compilation(owner: string, id: string): Promise<LiveCompilation> {
    const live = this.#compilations.get(id);
    if (live) {
      if (live.record.owner !== owner) throw notFound(`no compilation ${id}`);
      return live;
    }
    const record = await this.#compilationStore.get(owner, id);
    if (!record) throw notFound(`no compilation ${id}`);
    const model = await this.#loadModel(await this.#modelRecord(owner, record.model, true));
    const revived = { record, prepared: this.#prepare(model, record) };
    this.#compilations.set(id, revived);
    return revived;
  }

  /** Deletes a compilation, and its model's document if the model was deleted meanwhile. */
  async deleteCompilation(owner: string, id: string): Promise<void> {
    const { record } = await this.#compilation(owner, id);
    await this.#compilationStore.remove(record);
    this.#compilations.delete(id);
    this.#pool.unload(id);
    const model = await this.#models.get(owner, record.model);
    if (model?.deleted && !(await this.#compilationStore.modelInUse(owner, record.model))) {
      await this.#models.remove(owner, record.model);
      this.#loadedModels.delete(record.model);
    }
  }

  /** Runs one synchronous execution (NNAPI `executeSynchronously`). */
  async execute(owner: string, id: string, request: ExecutionRequest): Promise<ExecutionResult> {
    try {
      const result = await this.#execute(owner, id, request);
      this.metrics.count("nnserve_executions_total", "Executions by status", { status: "NONE" });
      return result;
    } catch (error) {
      const status = error instanceof DriverError ? error.status : "GENERAL_FAILURE";
      this.metrics.count("nnserve_executions_total", "Executions by status", { status });
      throw error;
    }
  }

  async #execute(owner: string, id: string, request: ExecutionRequest): Promise<ExecutionResult> {
    const started = performance.now();
    const { prepared, record } = await this.#compilation(owner, id);
    const inputs = resolveInputs(prepared, request);
    checkOutputArguments(prepared, request);
    const deadline = request.deadlineMs === undefined ? undefined : Date.now() + request.deadlineMs;
    const { outputs, onDeviceUs } = await this.#pool.run(id, prepared, inputs, {
      priority: record.priority,
      deadline,
    });
    const outputShapes = checkOutputShapes(request, outputs);
    const inDriverUs = Math.max(onDeviceUs, Math.round((performance.now() - started) * 1000));
    return {
      outputs,
      outputShapes,
      timing: request.measureTiming ? { onDeviceUs, inDriverUs } : undefined,
    };
  }
}
