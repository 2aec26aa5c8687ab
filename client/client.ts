/**
 * `NnClient`: the SDK's entry point, one client of one nnserve service. It owns the
 * transport (base URL and API key) that every model, memory, compilation and execution it
 * creates shares.
 */
import { rememberApiKey } from "./burst_open.ts";
import { type Compilation, compile, type CompileOptions } from "./compilation.ts";
import { Transport, type TransportOptions } from "./http.ts";
import { createMemory, type Memory, type MemorySource } from "./memory.ts";
import { Model, namingQuery } from "./model.ts";
import { V2Client } from "./v2.ts";
import type {
  CompilationSummary,
  DeviceInfo,
  ModelInfo,
  ModelNaming,
  PageOptions,
} from "./types.ts";

/** Options of {@link NnClient.importOnnx}. */
export interface OnnxImportOptions extends ModelNaming {
  /** Input shapes fixed at conversion, by ONNX input name. */
  shapes?: Record<string, readonly number[]>;
  /** Input values fixed at conversion (a sample rate): they are then not inputs. */
  values?: Record<string, readonly number[]>;
}

/** Where the service is and which API key identifies this client. */
export type NnClientOptions = TransportOptions;

/** A client of an nnserve service. */
export class NnClient {
  readonly #transport: Transport;
  /**
   * The same service through the Open Inference Protocol (KServe v2) at `/v2`, as this
   * client (same key): health, metadata, inference, shared memory, repository, statistics.
   */
  readonly v2: V2Client;

  /** A client of the service at `options.baseUrl`; nothing is sent until it is used. */
  constructor(options: NnClientOptions) {
    this.#transport = new Transport(options);
    this.v2 = new V2Client(options);
    // Bursts are WebSockets, which cannot send the Authorization header.
    rememberApiKey(this.#transport, options.apiKey);
  }

  /** The service's root URL, without a trailing slash. */
  get baseUrl(): string {
    return this.#transport.baseUrl;
  }

  /** The service's devices (`GET /v1/devices`). */
  async devices(): Promise<DeviceInfo[]> {
    const body = await this.#transport.json<{ devices: DeviceInfo[] }>("GET", "/v1/devices");
    return body.devices;
  }

  /** A new, empty model to build. */
  model(): Model {
    return new Model(this.#transport);
  }

  /**
   * Imports an ONNX file (`POST /v1/models` as application/onnx): the service converts it
   * into an NNAPI model and registers it. `shapes` fixes input shapes at conversion (by
   * ONNX input name); otherwise symbolic extents are given at execution. `values` fixes
   * inputs' values at conversion, which folds what depends only on them.
   */
  async importOnnx(bytes: Uint8Array, options: OnnxImportOptions = {}): Promise<ModelInfo> {
    const query = namingQuery(options);
    for (const [input, shape] of Object.entries(options.shapes ?? {})) {
      query.append("shape", `${input}:${shape.join("x")}`);
    }
    for (const [input, values] of Object.entries(options.values ?? {})) {
      query.append("value", `${input}:${values.join(",")}`);
    }
    const search = query.size > 0 ? `?${query}` : "";
    const response = await this.#transport.send("POST", `/v1/models${search}`, { bytes }, {
      "content-type": "application/onnx",
    });
    return await response.json() as ModelInfo;
  }

  /**
   * A page of this client's models (`GET /v1/models`), of one name (and version) when
   * given; `next` is the cursor of the following page, absent on the last.
   */
  listModels(
    options: ModelNaming & PageOptions = {},
  ): Promise<{ models: ModelInfo[]; next?: string }> {
    const query = namingQuery(options);
    pageQuery(query, options);
    return this.#transport.json("GET", `/v1/models${query.size > 0 ? `?${query}` : ""}`);
  }

  /**
   * A page of this client's compilations (`GET /v1/compilations`), of one model when given;
   * `next` is the cursor of the following page, absent on the last.
   */
  listCompilations(
    options: { model?: string } & PageOptions = {},
  ): Promise<{ compilations: CompilationSummary[]; next?: string }> {
    const query = new URLSearchParams();
    if (options.model !== undefined) query.set("model", options.model);
    pageQuery(query, options);
    const search = query.size > 0 ? `?${query}` : "";
    return this.#transport.json("GET", `/v1/compilations${search}`);
  }

  /** Metadata of a registered model of this client. */
  modelInfo(id: string): Promise<ModelInfo> {
    return this.#transport.json<ModelInfo>("GET", `/v1/models/${encodeURIComponent(id)}`);
  }

  /**
   * Creates a shared memory pool (`POST /v1/memories`): from bytes, or zero-filled with
   * `{size}` bytes. Reference it from models and executions by offset and length.
   */
  createMemory(source: MemorySource): Promise<Memory> {
    return createMemory(this.#transport, source);
  }

  /** Prepares a model (finishing it first if needed) or a registered model id. */
  compile(model: Model | string, options?: CompileOptions): Promise<Compilation> {
    return compile(this.#transport, model, options);
  }
}

function pageQuery(query: URLSearchParams, page: PageOptions): void {
  if (page.limit !== undefined) query.set("limit", String(page.limit));
  if (page.cursor !== undefined) query.set("cursor", page.cursor);
}
