/**
 * The SDK's gRPC client of the Open Inference Protocol (`inference.proto` beside it), for
 * Deno and Node (it needs `node:http2`, so it is not part of `mod.ts`, which browsers load):
 * the service's calls with typed arrays in and out, and `stream()`, requests pipelined on one
 * ModelStreamInfer stream with answers matched to their requests.
 *
 * ```ts
 * const grpc = new GrpcClient({ address: "localhost:8001", apiKey });
 * const { outputs } = await grpc.infer("adder", [
 *   { name: "input0", datatype: "FP32", shape: [2], data: new Float32Array([1, 2]) },
 *   { name: "input1", datatype: "FP32", shape: [2], data: new Float32Array([10, 20]) },
 * ]);
 * ```
 */
import { Buffer } from "node:buffer";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** A tensor's values as the typed array of its datatype. */
export type GrpcTensorData =
  | Float32Array
  | Float64Array
  | Int8Array
  | Int16Array
  | Int32Array
  | Uint8Array
  | Uint16Array
  | Uint32Array;

/** A tensor in or out of an inference. */
export interface GrpcTensor {
  name: string;
  /** The protocol's datatype: FP32, INT32, UINT8, ... */
  datatype: string;
  shape: number[];
  data: GrpcTensorData;
}

/** What an inference answers. */
export interface GrpcInferResult {
  model: string;
  version: string;
  id: string;
  outputs: GrpcTensor[];
}

/** Options of one inference. */
export interface GrpcInferOptions {
  version?: string;
  id?: string;
  /** Fails the call with DEADLINE_EXCEEDED when it takes longer. */
  deadlineMs?: number;
}

/** A failed call: the gRPC code and the service's message. */
export class GrpcCallError extends Error {
  constructor(readonly code: grpc.status, message: string) {
    super(message);
    this.name = "GrpcCallError";
  }
}

const ARRAYS: Record<string, new (buffer: ArrayBuffer) => GrpcTensorData> = {
  FP32: Float32Array,
  FP64: Float64Array,
  INT8: Int8Array,
  INT16: Int16Array,
  INT32: Int32Array,
  UINT8: Uint8Array,
  UINT16: Uint16Array,
  UINT32: Uint32Array,
  BOOL: Uint8Array,
};

const PROTO = fileURLToPath(new URL("./inference.proto", import.meta.url));

type Stub = grpc.Client & Record<string, (...args: unknown[]) => unknown>;

interface WireOutput {
  name: string;
  datatype: string;
  shape: number[];
}

interface WireResponse {
  model_name: string;
  model_version: string;
  id: string;
  outputs: WireOutput[];
  raw_output_contents: Uint8Array[];
}

/** A ModelInferRequest of typed arrays, as raw contents. */
function inferRequest(model: string, inputs: readonly GrpcTensor[], options: GrpcInferOptions) {
  return {
    model_name: model,
    model_version: options.version ?? "",
    id: options.id ?? "",
    inputs: inputs.map(({ name, datatype, shape }) => ({ name, datatype, shape })),
    raw_input_contents: inputs.map((input) =>
      Buffer.from(input.data.buffer, input.data.byteOffset, input.data.byteLength)
    ),
  };
}

/** A ModelInferResponse's raw outputs as typed arrays. */
function inferResult(response: WireResponse): GrpcInferResult {
  return {
    model: response.model_name,
    version: response.model_version,
    id: response.id,
    outputs: response.outputs.map((output, k) => {
      const raw = response.raw_output_contents[k] ?? new Uint8Array();
      const copy = new Uint8Array(raw).buffer; // aligned, and its own
      const array = ARRAYS[output.datatype] ?? Uint8Array;
      return { ...output, data: new array(copy) };
    }),
  };
}

/**
 * The service's class from `inference.proto`, loaded once (its `service` is the definition a
 * server serves): fields keep the protocol's snake_case names, 64-bit integers are numbers,
 * enums their names, absent fields their defaults.
 */
export const GRPCInferenceService: grpc.ServiceClientConstructor = (grpc.loadPackageDefinition(
  protoLoader.loadSync(PROTO, {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  }),
) as unknown as { inference: { GRPCInferenceService: grpc.ServiceClientConstructor } })
  .inference.GRPCInferenceService;

/** A client of a service's gRPC endpoint. */
export class GrpcClient {
  readonly #stub: Stub;
  readonly #apiKey?: string;

  constructor(options: { address: string; apiKey?: string }) {
    this.#stub = new GRPCInferenceService(
      options.address,
      grpc.credentials.createInsecure(),
      // Any size each way, as Triton's client: the service's body limit is what bounds a
      // request, and an answer is as large as its model makes it (grpc-js's default
      // refused answers over 4 MiB).
      { "grpc.max_receive_message_length": -1, "grpc.max_send_message_length": -1 },
    ) as unknown as Stub;
    this.#apiKey = options.apiKey;
  }

  #metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (this.#apiKey) metadata.set("authorization", `Bearer ${this.#apiKey}`);
    return metadata;
  }

  #call<T>(method: string, request: unknown, deadlineMs?: number): Promise<T> {
    const options = deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs };
    return new Promise((resolve, reject) => {
      this.#stub[method](request, this.#metadata(), options, (
        error: grpc.ServiceError | null,
        response: T,
      ) => error ? reject(new GrpcCallError(error.code, error.details)) : resolve(response));
    });
  }

  /** Whether the service is live (no key needed). */
  async serverLive(): Promise<boolean> {
    return (await this.#call<{ live: boolean }>("ServerLive", {})).live;
  }

  /** Whether the service is ready (its model repository loaded). */
  async serverReady(): Promise<boolean> {
    return (await this.#call<{ ready: boolean }>("ServerReady", {})).ready;
  }

  /** Whether a model version (the newest ready one without `version`) serves. */
  async modelReady(name: string, version = ""): Promise<boolean> {
    return (await this.#call<{ ready: boolean }>("ModelReady", { name, version })).ready;
  }

  /** A model's versions, platform, inputs and outputs. */
  modelMetadata(name: string, version = ""): Promise<{
    name: string;
    versions: string[];
    platform: string;
    inputs: { name: string; datatype: string; shape: number[] }[];
    outputs: { name: string; datatype: string; shape: number[] }[];
  }> {
    return this.#call("ModelMetadata", { name, version });
  }

  /** Runs one inference; its inputs and outputs travel as raw contents. */
  async infer(
    model: string,
    inputs: readonly GrpcTensor[],
    options: GrpcInferOptions = {},
  ): Promise<GrpcInferResult> {
    const response = await this.#call<WireResponse>(
      "ModelInfer",
      inferRequest(model, inputs, options),
      options.deadlineMs,
    );
    return inferResult(response);
  }

  /**
   * A ModelStreamInfer stream: `infer` sends a request at once and resolves with its answer
   * (the service answers in request order, up to 32 in flight; one past that is refused
   * with RESOURCE_EXHAUSTED); `close` ends the stream after the answers still due.
   */
  stream(): GrpcStream {
    const call = this.#stub.ModelStreamInfer(this.#metadata()) as grpc.ClientDuplexStream<
      unknown,
      { error_message: string; infer_response: WireResponse }
    >;
    return new GrpcStream(call);
  }

  /** Closes the connection. */
  close(): void {
    this.#stub.close();
  }
}

/** Requests pipelined on one ModelStreamInfer stream. */
export class GrpcStream {
  readonly #call: grpc.ClientDuplexStream<
    unknown,
    { error_message: string; infer_response: WireResponse }
  >;
  /** The requests awaiting answers, by id (each request carries one). */
  readonly #waiting = new Map<
    string,
    { resolve(r: GrpcInferResult): void; reject(e: Error): void }
  >();
  #next = 0;
  #ended: Promise<void>;

  constructor(
    call: grpc.ClientDuplexStream<unknown, { error_message: string; infer_response: WireResponse }>,
  ) {
    this.#call = call;
    call.on("data", ({ error_message, infer_response }) => {
      const waiter = this.#waiting.get(infer_response.id);
      if (!waiter) return;
      this.#waiting.delete(infer_response.id);
      if (error_message) {
        const code = /^RESOURCE_EXHAUSTED/.test(error_message)
          ? grpc.status.RESOURCE_EXHAUSTED
          : grpc.status.UNKNOWN;
        waiter.reject(new GrpcCallError(code, error_message));
      } else {
        waiter.resolve(inferResult(infer_response));
      }
    });
    this.#ended = new Promise((resolve) => {
      const fail = (error: Error) => {
        for (const waiter of this.#waiting.values()) waiter.reject(error);
        this.#waiting.clear();
        resolve();
      };
      call.on(
        "error",
        (error: grpc.ServiceError) => fail(new GrpcCallError(error.code, error.details)),
      );
      call.on("end", () => fail(new GrpcCallError(grpc.status.CANCELLED, "the stream ended")));
    });
  }

  /** Sends one inference (its id: `options.id`, else a number of the stream's own). */
  infer(
    model: string,
    inputs: readonly GrpcTensor[],
    options: GrpcInferOptions = {},
  ): Promise<GrpcInferResult> {
    const id = options.id ?? `s${this.#next++}`;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      this.#call.write(inferRequest(model, inputs, { ...options, id }));
    });
  }

  /** Ends the stream once the service has answered what was sent. */
  async close(): Promise<void> {
    this.#call.end();
    await this.#ended;
  }
}
