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
import { DRIVER_VERSION } from "../../driver/compilation/plan_codec.ts";
import { invalid } from "../../nnapi/errors.ts";
import type { Service } from "../../serving/service.ts";
import { servingCompilation } from "../../serving/served_models.ts";
import { type ApiKeys, bearerKey, keyHolder } from "../auth.ts";
import { checked, grpcError, grpcParameters, inferRequestOf, tolerantService } from "./messages.ts";
import { streamInfer } from "./stream.ts";
// The protocol's definition ships with the SDK (client/ stands alone); the server serves it.
import { GRPCInferenceService } from "../../client/grpc.ts";
import { decodeInference, encodeInference } from "../v2/infer.ts";
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

/** What the gRPC endpoint serves over. */
export interface GrpcOptions extends RepositoryOptions {
  hostname: string;
  /** 0 takes a free port. */
  port: number;
  apiKeys: ApiKeys;
  /**
   * The largest message a client may send (the service's body limit, NNSERVE_MAX_BODY_BYTES;
   * at most gRPC's own 2 GiB - 1): grpc-js's default of 4 MiB refused a camera frame that
   * HTTP takes.
   */
  maxMessageBytes: number;
}

/** The largest message length gRPC can carry (its length prefix is a signed 32-bit integer). */
const GRPC_MAX_MESSAGE_BYTES = 2 ** 31 - 1;

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

/** Starts the endpoint; resolves once it listens. */
export async function startGrpc(service: Service, options: GrpcOptions): Promise<GrpcServer> {
  const identify = keyHolder(options.apiKeys);
  const unary = (handler: Handler, open = false) =>
  (
    call: Call,
    callback: grpc.sendUnaryData<unknown>,
  ) => {
    const key = bearerKey(call.metadata.get("authorization")[0]?.toString());
    new Promise<string>((resolve) => resolve(open ? "" : identify(key)))
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

  const server = new grpc.Server({
    "grpc.max_receive_message_length": Math.min(options.maxMessageBytes, GRPC_MAX_MESSAGE_BYTES),
    // Answers are as large as the model makes them; the client says what it takes.
    "grpc.max_send_message_length": -1,
  });
  server.addService(tolerantService(GRPCInferenceService.service), {
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
      streamInfer(call, {
        infer: (client, request) => infer(client, request, Infinity),
        identify,
        polling: service.driver.polling,
      }),
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
