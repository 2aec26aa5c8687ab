/**
 * A client of the Open Inference Protocol (KServe v2 REST) with Triton's binary tensor,
 * system shared-memory, model repository and statistics extensions, written from those
 * specifications so it talks to any server that speaks them (nnserve's `/v2`, Triton,
 * KServe, MLServer, OpenVINO Model Server). It sends what `tritonclient.http` sends: compact
 * JSON, binary data after the JSON with `Inference-Header-Content-Length`, and POSTs without
 * a Content-Type. It imports nothing but the platform's fetch.
 *
 * ```ts
 * const v2 = new NnClient({ baseUrl }).v2;
 * const result = await v2.infer("adder", [
 *   { name: "input0", datatype: "FP32", shape: [2], data: [1, 2] },
 *   { name: "input1", datatype: "FP32", shape: [2], data: new Float32Array([10, 20]), binary: true },
 * ]);
 * result.outputs[0].data; // Float32Array [11, 22]
 * ```
 *
 * @module
 */
import { arrayOf } from "./tensor.ts";
import { decodeTensor, encodeTensor, fromJson } from "./v2_tensors.ts";
import type {
  V2InferOptions,
  V2InferResult,
  V2Input,
  V2ModelMetadata,
  V2ModelStatistics,
  V2Output,
  V2Parameter,
  V2RegionSpan,
  V2RegionStatus,
  V2RepositoryEntry,
  V2ServerMetadata,
} from "./v2_types.ts";

/** Where the server is and who is asking. */
export interface V2ClientOptions {
  /** The server's root, e.g. `http://127.0.0.1:8080` (the client adds `/v2/...`). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string;
  /** The fetch to use (default: the platform's). */
  fetch?: typeof fetch;
}

/** A failed protocol request: the HTTP status and the server's `error` text. */
export class V2Error extends Error {
  /** HTTP status; 0 when the server could not be reached. */
  readonly httpStatus: number;

  /** Made by the client from an error answer. */
  constructor(httpStatus: number, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = "V2Error";
    this.httpStatus = httpStatus;
  }
}

const HEADER_LENGTH = "Inference-Header-Content-Length";

/** The shared-memory parameters of a tensor. */
function regionParameters(region: V2RegionSpan) {
  return {
    shared_memory_region: region.region,
    shared_memory_byte_size: region.byteSize,
    ...(region.offset !== undefined ? { shared_memory_offset: region.offset } : {}),
  };
}

/** A client of one Open Inference Protocol server. */
export class V2Client {
  readonly #baseUrl: string;
  readonly #headers: Record<string, string>;
  readonly #fetch: typeof fetch;

  /** A client of the server at `options.baseUrl`; nothing is sent until it is used. */
  constructor(options: V2ClientOptions) {
    this.#baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#headers = options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {};
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  async #request(
    method: string,
    path: string,
    body?: BodyInit,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    let response: Response;
    try {
      response = await this.#fetch(`${this.#baseUrl}${path}`, {
        method,
        headers: { ...this.#headers, ...headers },
        body,
      });
    } catch (cause) {
      throw new V2Error(0, `the server at ${this.#baseUrl} could not be reached`, { cause });
    }
    if (response.ok) return response;
    const text = await response.text();
    let message = text || response.statusText;
    try {
      const parsed = JSON.parse(text);
      if (typeof parsed?.error === "string") message = parsed.error;
    } catch {
      // Not JSON: the text is the message.
    }
    throw new V2Error(response.status, message);
  }

  /** A JSON request (compact, without a Content-Type, as tritonclient sends it). */
  async #json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.#request(
      method,
      path,
      body === undefined ? undefined : JSON.stringify(body),
    );
    const text = await response.text();
    return (text ? JSON.parse(text) : {}) as T;
  }

  /** Whether a GET answers 200 (health and readiness). */
  async #ok(path: string): Promise<boolean> {
    try {
      const response = await this.#request("GET", path);
      await response.body?.cancel();
      return true;
    } catch (error) {
      if (error instanceof V2Error && error.httpStatus !== 0) return false;
      throw error;
    }
  }

  #model(name: string, version?: string): string {
    const base = `/v2/models/${encodeURIComponent(name)}`;
    return version === undefined ? base : `${base}/versions/${encodeURIComponent(version)}`;
  }

  /** `GET /v2/health/live` answers 200. */
  isServerLive(): Promise<boolean> {
    return this.#ok("/v2/health/live");
  }

  /** `GET /v2/health/ready` answers 200. */
  isServerReady(): Promise<boolean> {
    return this.#ok("/v2/health/ready");
  }

  /** The server's name, version and extensions (`GET /v2`). */
  serverMetadata(): Promise<V2ServerMetadata> {
    return this.#json("GET", "/v2");
  }

  /** The model (version) is ready for inference. */
  isModelReady(name: string, version?: string): Promise<boolean> {
    return this.#ok(`${this.#model(name, version)}/ready`);
  }

  /** The model's versions, inputs and outputs. */
  modelMetadata(name: string, version?: string): Promise<V2ModelMetadata> {
    return this.#json("GET", this.#model(name, version));
  }

  /** The model's configuration (Triton's model_configuration extension). */
  modelConfig(name: string, version?: string): Promise<Record<string, unknown>> {
    return this.#json("GET", `${this.#model(name, version)}/config`);
  }

  /**
   * Runs one inference. Inputs with `binary` go as binary data after the JSON (with
   * `Inference-Header-Content-Length`); outputs come back decoded either way.
   */
  async infer(
    name: string,
    inputs: readonly V2Input[],
    options: V2InferOptions = {},
  ): Promise<V2InferResult> {
    const binaries: Uint8Array[] = [];
    const request = {
      ...(options.id !== undefined ? { id: options.id } : {}),
      ...(options.parameters || options.binaryOutputs
        ? {
          parameters: {
            ...options.parameters,
            ...(options.binaryOutputs ? { binary_data_output: true } : {}),
          },
        }
        : {}),
      inputs: inputs.map((input) => {
        const head = { name: input.name, shape: [...input.shape], datatype: input.datatype };
        if (input.sharedMemory) {
          return { ...head, parameters: regionParameters(input.sharedMemory) };
        }
        if (input.data === undefined) throw new Error(`input ${input.name} has no data`);
        if (input.binary) {
          const bytes = encodeTensor(input.datatype, input.data);
          binaries.push(bytes);
          return { ...head, parameters: { binary_data_size: bytes.byteLength } };
        }
        const data = ArrayBuffer.isView(input.data) && !Array.isArray(input.data)
          ? arrayOf(input.data as unknown as ArrayLike<number>)
          : input.data;
        return { ...head, data };
      }),
      ...(options.outputs
        ? {
          outputs: options.outputs.map((output) => ({
            name: output.name,
            ...(output.sharedMemory
              ? { parameters: regionParameters(output.sharedMemory) }
              : output.binary !== undefined
              ? { parameters: { binary_data: output.binary } }
              : {}),
          })),
        }
        : {}),
    };
    const json = new TextEncoder().encode(JSON.stringify(request));
    let body: Uint8Array = json;
    const headers: Record<string, string> = {};
    if (binaries.length > 0) {
      body = new Uint8Array(json.byteLength + binaries.reduce((n, b) => n + b.byteLength, 0));
      body.set(json);
      let at = json.byteLength;
      for (const bytes of binaries) {
        body.set(bytes, at);
        at += bytes.byteLength;
      }
      headers[HEADER_LENGTH] = String(json.byteLength);
    }
    const response = await this.#request(
      "POST",
      `${this.#model(name, options.version)}/infer`,
      body as Uint8Array<ArrayBuffer>,
      headers,
    );
    return this.#decodeResponse(response);
  }

  async #decodeResponse(response: Response): Promise<V2InferResult> {
    const bytes = new Uint8Array(await response.arrayBuffer());
    const headerLength = response.headers.get(HEADER_LENGTH);
    const jsonLength = headerLength === null ? bytes.byteLength : Number(headerLength);
    const parsed = JSON.parse(new TextDecoder().decode(bytes.subarray(0, jsonLength))) as {
      model_name: string;
      model_version?: string;
      id?: string;
      outputs: {
        name: string;
        datatype: string;
        shape: number[];
        parameters?: Record<string, V2Parameter>;
        data?: unknown[];
      }[];
    };
    let at = jsonLength;
    const outputs = parsed.outputs.map((output): V2Output => {
      const size = output.parameters?.binary_data_size;
      if (typeof size === "number") {
        const data = decodeTensor(output.datatype, bytes.subarray(at, at + size));
        at += size;
        return { ...output, data };
      }
      const { data, ...rest } = output;
      return data === undefined ? rest : { ...rest, data: fromJson(output.datatype, data) };
    });
    return {
      modelName: parsed.model_name,
      modelVersion: parsed.model_version,
      id: parsed.id,
      outputs,
    };
  }

  /** Registers a system shared-memory region (on nnserve, `key` is a memory id). */
  async registerSystemSharedMemory(
    name: string,
    key: string,
    byteSize: number,
    offset = 0,
  ): Promise<void> {
    await this.#json(
      "POST",
      `/v2/systemsharedmemory/region/${encodeURIComponent(name)}/register`,
      { key, offset, byte_size: byteSize },
    );
  }

  /** The status of one registered region, or of all. */
  systemSharedMemoryStatus(name?: string): Promise<V2RegionStatus[]> {
    const region = name === undefined ? "" : `/region/${encodeURIComponent(name)}`;
    return this.#json("GET", `/v2/systemsharedmemory${region}/status`);
  }

  /** Unregisters one region, or all. */
  async unregisterSystemSharedMemory(name?: string): Promise<void> {
    const region = name === undefined ? "" : `/region/${encodeURIComponent(name)}`;
    await this.#json("POST", `/v2/systemsharedmemory${region}/unregister`);
  }

  /** The models of the repository and their state; only ready ones with `ready`. */
  repositoryIndex(ready?: boolean): Promise<V2RepositoryEntry[]> {
    return this.#json("POST", "/v2/repository/index", ready === undefined ? {} : { ready });
  }

  /** Loads (or reloads) a model. */
  async loadModel(name: string): Promise<void> {
    await this.#json("POST", `/v2/repository/models/${encodeURIComponent(name)}/load`);
  }

  /** Unloads a model. */
  async unloadModel(name: string): Promise<void> {
    await this.#json("POST", `/v2/repository/models/${encodeURIComponent(name)}/unload`);
  }

  /** Inference statistics of a model (version), or of every model. */
  async inferenceStatistics(name?: string, version?: string): Promise<V2ModelStatistics[]> {
    const path = name === undefined ? "/v2/models/stats" : `${this.#model(name, version)}/stats`;
    const body = await this.#json<{ model_stats: V2ModelStatistics[] }>("GET", path);
    return body.model_stats;
  }
}
