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
import { decodeTensor, encodeTensor, fromJson, type TensorData } from "./v2_tensors.ts";

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

/** A parameter value of the protocol. */
export type V2Parameter = string | number | boolean;

/** Server metadata (`GET /v2`). */
export interface V2ServerMetadata {
  /** The server's name. */
  name: string;
  /** The server's version. */
  version: string;
  /** The protocol extensions it implements (`binary_tensor_data`, `statistics`, ...). */
  extensions: string[];
}

/** An input or output as model metadata describes it. */
export interface V2TensorMetadata {
  /** The tensor's name, which inference requests and responses use. */
  name: string;
  /** The protocol datatype: FP32, FP16, INT32, UINT8, INT8, BOOL, ... */
  datatype: string;
  /** The shape; -1 marks an extent given per request. */
  shape: number[];
}

/** Model metadata (`GET /v2/models/{name}`). */
export interface V2ModelMetadata {
  /** The model's name. */
  name: string;
  /** The versions the server has. */
  versions?: string[];
  /** What runs it (nnserve: `nnapi`, or `onnx` for imported models). */
  platform: string;
  /** Its inputs, in order. */
  inputs: V2TensorMetadata[];
  /** Its outputs, in order. */
  outputs: V2TensorMetadata[];
  /** Extra facts (nnserve: `<tensor>_scale` and `<tensor>_zero_point` of quantized ones). */
  parameters?: Record<string, V2Parameter>;
}

/** Tensor data: a typed array, or plain numbers (nested or flat) and booleans for BOOL. */
export type V2TensorData =
  | ArrayLike<number>
  | readonly unknown[]
  | ArrayBufferView;

/** A span of a registered shared-memory region. */
export interface V2RegionSpan {
  /** The region's name. */
  region: string;
  /** Bytes of the tensor. */
  byteSize: number;
  /** Where in the region it starts (default 0). */
  offset?: number;
}

/** One input of an inference request. */
export interface V2Input {
  /** The model input's name. */
  name: string;
  /** Its protocol datatype. */
  datatype: string;
  /** Its shape for this request. */
  shape: readonly number[];
  /** The values, row-major; absent when they are in a shared-memory region. */
  data?: V2TensorData;
  /** Send the data as binary after the JSON instead of as JSON numbers. */
  binary?: boolean;
  /** Read the input from a registered region instead. */
  sharedMemory?: V2RegionSpan;
}

/** One output asked for; when `outputs` is given, only those come back. */
export interface V2RequestedOutput {
  /** The model output's name. */
  name: string;
  /** Return it as binary after the JSON. */
  binary?: boolean;
  /** Write it into a registered region instead of returning it. */
  sharedMemory?: V2RegionSpan;
}

/** Options of {@link V2Client.infer}. */
export interface V2InferOptions {
  /** The model version (default: the server's choice, the latest ready one). */
  version?: string;
  /** The request id, echoed in the response. */
  id?: string;
  /** The outputs to return (default: all, as JSON). */
  outputs?: readonly V2RequestedOutput[];
  /** Every output as binary unless an output says otherwise (`binary_data_output`). */
  binaryOutputs?: boolean;
  /** Request parameters to send as they are. */
  parameters?: Record<string, V2Parameter>;
}

/** An output of a response: its data decoded (typed array; booleans for BOOL). */
export interface V2Output {
  /** The model output's name. */
  name: string;
  /** Its protocol datatype. */
  datatype: string;
  /** Its shape in this response. */
  shape: number[];
  /** What the server said of it (`binary_data_size`, `shared_memory_region`, ...). */
  parameters?: Record<string, V2Parameter>;
  /** Absent for an output written into a shared-memory region. */
  data?: TensorData;
}

/** An inference response. */
export interface V2InferResult {
  /** The model that answered. */
  modelName: string;
  /** Its version. */
  modelVersion?: string;
  /** The request's id, echoed. */
  id?: string;
  /** The outputs returned, in the model's order. */
  outputs: V2Output[];
}

/** A registered system shared-memory region, as its status reports it. */
export interface V2RegionStatus {
  /** The region's name. */
  name: string;
  /** What it maps (nnserve: a memory id). */
  key: string;
  /** Where in the key's memory it starts. */
  offset: number;
  /** Its size in bytes. */
  byte_size: number;
}

/** An entry of the repository index. */
export interface V2RepositoryEntry {
  /** The model's name. */
  name: string;
  /** The version. */
  version?: string;
  /** READY, UNAVAILABLE, ... */
  state?: string;
  /** Why it is not ready. */
  reason?: string;
}

/** One duration statistic: how many and how long in all. */
export interface V2Duration {
  /** How many. */
  count: number;
  /** Nanoseconds in all. */
  ns: number;
}

/** The statistics of one model version (the statistics extension). */
export interface V2ModelStatistics {
  /** The model's name. */
  name: string;
  /** The version. */
  version: string;
  /** When it last ran (ms since the epoch; 0 when never). */
  last_inference: number;
  /** Inferences that succeeded. */
  inference_count: number;
  /** Executions that ran them (no batching: the same). */
  execution_count: number;
  /** Durations by phase: success, fail, queue, compute_input, compute_infer, compute_output. */
  inference_stats: Record<
    "success" | "fail" | "queue" | "compute_input" | "compute_infer" | "compute_output",
    V2Duration
  >;
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
