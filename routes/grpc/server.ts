/**
 * The Open Inference Protocol over gRPC (`inference.GRPCInferenceService`, the calls of
 * `client/inference.proto`) on a port of its own (NNSERVE_GRPC_PORT): the transport of `/v2`'s
 * calls over `@grpc/grpc-js` on Deno's `node:http2`. Every call goes through what `/v2`
 * uses: the served models by name and version, the same request decoding and driver, the
 * same API keys (the `authorization` metadata's bearer key), and the driver's errors as
 * gRPC status codes.
 */
import * as http2 from "node:http2";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { fileURLToPath } from "node:url";
import { DRIVER_VERSION } from "../../driver/compilation/plan_codec.ts";
import { DriverError, type ErrorStatus, invalid } from "../../nnapi/errors.ts";
import type { Service } from "../../serving/service.ts";
import { servingCompilation } from "../../serving/served_models.ts";
import { type ApiKeys, bearerKey, keyHolder } from "../auth.ts";
import { BinarySections } from "../binary_tensors.ts";
import { decodeInference, encodeInference, type InferRequest } from "../v2/infer.ts";
import { modelConfigOf, modelMetadataOf, V2_EXTENSIONS } from "../v2/models.ts";
import {
  loadModel,
  modelStatisticsOf,
  repositoryIndexOf,
  type RepositoryOptions,
} from "../v2/repository.ts";

/**
 * Deno's `node:http2` (2.9) lacks this constant, with which grpc-js answers a request that
 * is not gRPC; without it the answer is a 200 without a gRPC status.
 */
const constants = http2.constants as unknown as Record<string, number | string>;
constants.HTTP_STATUS_UNSUPPORTED_MEDIA_TYPE ??= 415;

// The protocol's definition ships with the SDK (client/ stands alone); the server reads it there.
const PROTO = fileURLToPath(new URL("../../client/inference.proto", import.meta.url));

/** The driver's statuses as gRPC codes (the rest: INTERNAL). */
const CODES: Partial<Record<ErrorStatus, grpc.status>> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  OUTPUT_INSUFFICIENT_SIZE: grpc.status.INVALID_ARGUMENT,
  NOT_FOUND: grpc.status.NOT_FOUND,
  UNAUTHORIZED: grpc.status.UNAUTHENTICATED,
  RESOURCE_EXHAUSTED_TRANSIENT: grpc.status.RESOURCE_EXHAUSTED,
  RESOURCE_EXHAUSTED_PERSISTENT: grpc.status.RESOURCE_EXHAUSTED,
  MISSED_DEADLINE_TRANSIENT: grpc.status.DEADLINE_EXCEEDED,
  MISSED_DEADLINE_PERSISTENT: grpc.status.DEADLINE_EXCEEDED,
  DEVICE_UNAVAILABLE: grpc.status.UNAVAILABLE,
};

/** A failure as gRPC answers it: the driver's status as a code, its message as details. */
export function grpcError(error: unknown): Partial<grpc.StatusObject> {
  if (error instanceof DriverError) {
    const metadata = new grpc.Metadata();
    metadata.set("nnserve-status", error.status);
    if (error.details.retryAfterSeconds !== undefined) {
      metadata.set("retry-after", String(error.details.retryAfterSeconds));
    }
    return {
      code: CODES[error.status] ?? grpc.status.INTERNAL,
      details: error.message,
      metadata,
    };
  }
  return { code: grpc.status.INTERNAL, details: (error as Error).message ?? String(error) };
}

/** What the gRPC endpoint serves over. */
export interface GrpcOptions extends RepositoryOptions {
  hostname: string;
  /** 0 takes a free port. */
  port: number;
  apiKeys: ApiKeys;
}

/** A running gRPC endpoint. */
export interface GrpcServer {
  readonly port: number;
  close(): Promise<void>;
}

type Call = grpc.ServerUnaryCall<Record<string, unknown>, unknown>;
type Handler = (
  call: { request: Record<string, unknown>; getDeadline(): grpc.Deadline },
  client: string,
) => Promise<unknown>;

/** A request protobuf could not decode: what the tolerant deserializer gives instead. */
const MALFORMED = Symbol("malformed");

/**
 * `service` with deserializers that do not throw: a message that does not decode becomes a
 * marker the handler answers INVALID_ARGUMENT to (grpc-js itself would answer INTERNAL,
 * which says the server failed).
 */
function tolerantService(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  return Object.fromEntries(
    Object.entries(service).map(([name, method]) => [name, {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (error) {
          return { [MALFORMED]: (error as Error).message };
        }
      },
    }]),
  ) as grpc.ServiceDefinition;
}

/** The request, or INVALID_ARGUMENT for one that did not decode. */
function checked<T extends { request: Record<string | symbol, unknown> }>(call: T): T {
  const malformed = call.request[MALFORMED];
  if (malformed !== undefined) {
    throw invalid(`the request is not a valid protobuf message: ${String(malformed)}`);
  }
  return call;
}

/** An InferParameter as protobuf.js decodes it (`parameter_choice` names the one set). */
type GrpcParameter = Record<string, unknown> & { parameter_choice?: string };

/** A parameters map as plain values (`/v2`'s JSON form). */
function plainParameters(
  map: Record<string, GrpcParameter> | undefined,
): Record<string, string | number | boolean> | undefined {
  const entries = Object.entries(map ?? {});
  if (entries.length === 0) return undefined;
  return Object.fromEntries(entries.map(([name, parameter]) => {
    const value = parameter.parameter_choice ? parameter[parameter.parameter_choice] : undefined;
    return [
      name,
      typeof value === "string" && /_param$/.test(parameter.parameter_choice!) &&
        parameter.parameter_choice !== "string_param"
        ? Number(value)
        : value as string | number | boolean,
    ];
  }));
}

/** Plain parameter values as InferParameters. */
function grpcParameters(
  parameters: Record<string, string | number | boolean> | undefined,
): Record<string, Record<string, unknown>> {
  return Object.fromEntries(
    Object.entries(parameters ?? {}).map(([name, value]) => [
      name,
      typeof value === "boolean"
        ? { bool_param: value }
        : typeof value === "number"
        ? { int64_param: value }
        : { string_param: value },
    ]),
  );
}

/** One tensor of a ModelInferRequest, as protobuf.js decodes it. */
interface GrpcInput {
  name: string;
  datatype: string;
  shape: (number | string)[];
  parameters?: Record<string, GrpcParameter>;
  contents?: Record<string, unknown[]>;
}

/** The `contents` field that carries a datatype's values (the protocol's table). */
const CONTENTS_FIELD: Record<string, string> = {
  BOOL: "bool_contents",
  INT8: "int_contents",
  INT16: "int_contents",
  INT32: "int_contents",
  INT64: "int64_contents",
  UINT8: "uint_contents",
  UINT16: "uint_contents",
  UINT32: "uint_contents",
  UINT64: "uint64_contents",
  FP32: "fp32_contents",
  FP64: "fp64_contents",
};

/**
 * A ModelInferRequest as `/v2`'s JSON request: typed `contents` become `data`, and
 * `raw_input_contents` (one per input, in request order) become binary sections.
 */
function inferRequestOf(
  message: Record<string, unknown>,
): { request: InferRequest; binary?: BinarySections } {
  const inputs = (message.inputs ?? []) as GrpcInput[];
  const raw = (message.raw_input_contents ?? []) as Uint8Array[];
  // Raw contents go, in order, to the inputs not in a shared-memory region (Triton's rule).
  const inShared = (input: GrpcInput) =>
    plainParameters(input.parameters)?.shared_memory_region !== undefined;
  const rawTaking = inputs.filter((input) => !inShared(input)).length;
  if (raw.length > 0 && raw.length !== rawTaking) {
    throw invalid(
      `raw_input_contents has ${raw.length} entries for ${rawTaking} inputs not in shared ` +
        "memory: give one per such input, or none and each input's contents",
      { path: ["raw_input_contents"] },
    );
  }
  let nextRaw = 0;
  const request: InferRequest = {
    ...(message.id ? { id: String(message.id) } : {}),
    inputs: inputs.map((input) => {
      const parameters = plainParameters(input.parameters);
      const head = {
        name: input.name,
        datatype: input.datatype,
        shape: input.shape.map(Number),
        ...(parameters ? { parameters } : {}),
      };
      // An input in a shared-memory region carries no contents.
      if (parameters?.shared_memory_region !== undefined) return head;
      if (raw.length > 0) {
        const bytes = raw[nextRaw++].byteLength;
        return { ...head, parameters: { ...parameters, binary_data_size: bytes } };
      }
      const values = input.contents?.[CONTENTS_FIELD[input.datatype] ?? ""] ?? [];
      return { ...head, data: values.map((v) => typeof v === "string" ? Number(v) : v) };
    }),
    outputs:
      ((message.outputs ?? []) as { name: string; parameters?: Record<string, GrpcParameter> }[])
        .map((o) => {
          const parameters = plainParameters(o.parameters);
          return { name: o.name, ...(parameters ? { parameters } : {}) };
        }),
  } as InferRequest;
  if (request.outputs?.length === 0) delete request.outputs;
  if (raw.length === 0) return { request };
  const bytes = new Uint8Array(raw.reduce((n, r) => n + r.byteLength, 0));
  let offset = 0;
  for (const r of raw) {
    bytes.set(r, offset);
    offset += r.byteLength;
  }
  return { request, binary: new BinarySections(bytes) };
}

/** Requests one ModelStreamInfer stream may have in flight (as a burst's window). */
export const STREAM_WINDOW = 32;

/**
 * ModelStreamInfer, the stream the protocol pipelines requests on (the peer of a burst):
 * each request starts as it arrives, up to {@link STREAM_WINDOW} in flight (one past it is
 * answered at once with an error naming the window, and holds nothing); answers go out in
 * the order their requests came, each carrying its request's id, an error as
 * `error_message`. The stream's key is checked once, from its metadata. When the client
 * goes (cancelled, or its connection lost) nothing more is written, and what runs finishes
 * into nothing.
 */
function streamInfer(
  call: grpc.ServerDuplexStream<Record<string, unknown>, unknown>,
  infer: (client: string, request: Record<string, unknown>) => Promise<unknown>,
  identify: (key: string | undefined) => Promise<string>,
): void {
  const client = identify(bearerKey(call.metadata.get("authorization")[0]?.toString()));
  /** Answers in request order; each settles to the message to write. */
  const pending: Promise<unknown>[] = [];
  let inFlight = 0;
  let ended = false;
  let gone = false;
  let writing = Promise.resolve();
  const failure = (request: Record<string, unknown>, error: unknown) => ({
    error_message: error instanceof DriverError
      ? `${error.status}: ${error.message}`
      : String((error as Error).message ?? error),
    infer_response: {
      model_name: String(request.model_name ?? ""),
      model_version: String(request.model_version ?? ""),
      id: String(request.id ?? ""),
    },
  });
  const flush = () => {
    writing = writing.then(async () => {
      while (pending.length > 0 && !gone) {
        const message = await pending.shift()!;
        inFlight--;
        if (!gone) call.write(message);
      }
      if (ended && pending.length === 0 && !gone) call.end();
    });
  };
  call.on("data", (request: Record<string, unknown>) => {
    if (gone) return;
    if (inFlight >= STREAM_WINDOW) {
      // A refusal holds no place: it overtakes the answers still running.
      call.write(failure(
        request,
        new DriverError(
          "RESOURCE_EXHAUSTED_TRANSIENT",
          `more than ${STREAM_WINDOW} requests in flight on this stream`,
        ),
      ));
      return;
    }
    inFlight++;
    pending.push(
      client.then((owner) => infer(owner, request))
        .then((response) => ({ infer_response: response }), (error) => failure(request, error)),
    );
    flush();
  });
  call.on("end", () => {
    ended = true;
    flush();
  });
  const leave = () => {
    gone = true;
  };
  call.on("cancelled", leave);
  call.on("error", leave);
}

/** Starts the endpoint; resolves once it listens. */
export async function startGrpc(service: Service, options: GrpcOptions): Promise<GrpcServer> {
  const definition = protoLoader.loadSync(PROTO, {
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as {
    inference: { GRPCInferenceService: { service: grpc.ServiceDefinition } };
  };
  const identify = keyHolder(options.apiKeys);
  const unary = (handler: Handler, open = false) =>
  (
    call: Call,
    callback: grpc.sendUnaryData<unknown>,
  ) => {
    const key = bearerKey(call.metadata.get("authorization")[0]?.toString());
    (open ? Promise.resolve("") : identify(key))
      .then((client) => handler(checked(call), client))
      .then((response) => callback(null, response), (error) => callback(grpcError(error)));
  };
  const served = (client: string, request: Record<string, unknown>) =>
    service.served.resolve(
      client,
      String(request.name ?? request.model_name ?? ""),
      String(request.version ?? request.model_version ?? "") || undefined,
    );

  /** One ModelInferRequest of `client`, answered as a ModelInferResponse. */
  const infer = async (client: string, message: Record<string, unknown>, deadline: number) => {
    checked({ request: message }); // a stream's messages come here unchecked
    const version = await served(client, message);
    const compilation = servingCompilation(version);
    const { request, binary } = inferRequestOf(message);
    const decoded = await decodeInference(
      request,
      version.model,
      binary,
      (name) => service.driver.regions.get(client, name),
    );
    // The call's deadline is the execution's (DEADLINE_EXCEEDED when it passes).
    const deadlineMs = Number.isFinite(deadline) ? Math.max(1, deadline - Date.now()) : undefined;
    const result = await service.driver.execute(client, compilation, {
      inputs: decoded.inputs,
      outputs: decoded.outputs,
      ...(deadlineMs !== undefined ? { deadlineMs } : {}),
    });
    // Every output as raw bytes: the protocol's fast form, and exact.
    const { outputs, binary: tensors } = encodeInference(
      result,
      version.model.outputs,
      decoded.delivery.map((d) => d.kind === "json" ? { kind: "binary" as const } : d),
    );
    return {
      model_name: version.name,
      model_version: version.version,
      id: request.id ?? "",
      outputs: outputs.map(({ name, datatype, shape, parameters }) => ({
        name,
        datatype,
        shape,
        // Where an output went to a shared-memory region, and how many bytes it wrote.
        parameters: grpcParameters(
          parameters?.shared_memory_region === undefined ? undefined : parameters,
        ),
      })),
      raw_output_contents: tensors,
    };
  };

  const server = new grpc.Server();
  server.addService(tolerantService(loaded.inference.GRPCInferenceService.service), {
    ServerLive: unary(() => Promise.resolve({ live: true }), true),
    ServerReady: unary(() => Promise.resolve({ ready: options.readiness().ready }), true),
    ServerMetadata: unary(
      () =>
        Promise.resolve({
          name: "nnserve",
          version: DRIVER_VERSION,
          // The binary tensor extension is HTTP's; raw contents are gRPC's own.
          extensions: V2_EXTENSIONS.filter((e) => e !== "binary_tensor_data"),
        }),
      true,
    ),
    ModelReady: unary(async (call, client) => {
      const version = await served(client, call.request);
      return { ready: version.compilation !== undefined };
    }),
    ModelMetadata: unary(async (call, client) => {
      return await modelMetadataOf(service, client, await served(client, call.request));
    }),
    ModelInfer: unary((call, client) => infer(client, call.request, Number(call.getDeadline()))),
    // The system shared-memory extension: regions are spans of the client's memories.
    SystemSharedMemoryStatus: unary(async (call, client) => {
      const name = String(call.request.name ?? "");
      const regions = name === ""
        ? await service.driver.regions.list(client)
        : [await service.driver.regions.get(client, name)];
      return {
        regions: Object.fromEntries(regions.map((r) => [r.name, {
          name: r.name,
          key: r.memory,
          offset: r.offset,
          byte_size: r.byteSize,
        }])),
      };
    }),
    SystemSharedMemoryRegister: unary(async (call, client) => {
      const { name, key, offset, byte_size } = call.request as Record<string, string | number>;
      await service.driver.regions.register(client, {
        name: String(name),
        memory: String(key),
        offset: Number(offset),
        byteSize: Number(byte_size),
      });
      return {};
    }),
    SystemSharedMemoryUnregister: unary(async (call, client) => {
      const name = String(call.request.name ?? "");
      await service.driver.regions.unregister(client, name === "" ? undefined : name);
      return {};
    }),
    ModelConfig: unary(async (call, client) => ({
      config: await modelConfigOf(service, client, await served(client, call.request)),
    })),
    // The model repository extension (`repository_name` is ignored: there is one).
    RepositoryIndex: unary(async (call, client) => ({
      models: await repositoryIndexOf(service, client, options, call.request.ready === true),
    })),
    RepositoryModelLoad: unary(async (call, client) => {
      await loadModel(service, options, client, String(call.request.model_name ?? ""));
      return {};
    }),
    RepositoryModelUnload: unary(async (call, client) => {
      await service.served.unload(client, String(call.request.model_name ?? ""));
      return {};
    }),
    // CUDA shared memory, as under /v2: none here (no region, none to register).
    CudaSharedMemoryStatus: unary(() => Promise.resolve({ regions: {} })),
    CudaSharedMemoryRegister: unary(() => {
      throw invalid("CUDA shared memory is not supported: use system shared memory over memories");
    }),
    CudaSharedMemoryUnregister: unary(() => Promise.resolve({})),
    ModelStatistics: unary(async (call, client) => {
      const name = String(call.request.name ?? "");
      const version = String(call.request.version ?? "");
      const versions = name === ""
        ? await service.served.index(client)
        : version === ""
        ? await service.served.versions(client, name)
        : [await service.served.resolve(client, name, version)];
      return { model_stats: versions.map((v) => modelStatisticsOf(service, client, v)) };
    }),
    ModelStreamInfer: (call: grpc.ServerDuplexStream<Record<string, unknown>, unknown>) =>
      streamInfer(call, (client, request) => infer(client, request, Infinity), identify),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `${options.hostname}:${options.port}`,
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => error ? reject(error) : resolve(bound),
    )
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Calls still running after a moment are cut (as HTTP's shutdown grace ends them).
        const cut = setTimeout(() => server.forceShutdown(), 2000);
        server.tryShutdown(() => {
          clearTimeout(cut);
          resolve();
        });
      }),
  };
}
