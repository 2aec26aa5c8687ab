/**
 * The Open Inference Protocol's core (KServe v2 REST): server health and metadata, model
 * metadata, readiness and configuration, and inference, with or without `/versions/{v}`.
 * Routes translate the protocol to driver calls (`serving/served_models.ts` resolves names);
 * the driver validates what it runs.
 */
import { DEFAULT_BATCH_QUEUE_SIZE } from "../../driver/execution/dynamic_batcher.ts";
import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Service } from "../../serving/service.ts";
import { DRIVER_VERSION } from "../../driver/compilation/plan_codec.ts";
import { type ServedVersion, servingCompilation } from "../../serving/served_models.ts";
import { DriverError, invalid } from "../../nnapi/errors.ts";
import {
  BinarySections,
  framedResponse,
  INFERENCE_HEADER_LENGTH,
  OCTET_STREAM,
  splitFramedBody,
  utf8Text,
} from "../binary_tensors.ts";
import { schemaError } from "../errors.ts";
import { type BodyLimits, cappedBody, readableAtOnce } from "../request_body.ts";
import type { Readiness } from "../health.ts";
import { newRouter } from "../router.ts";
import { isQuantized, oipDatatype, oipShape } from "./datatypes.ts";
import {
  decodeInference,
  encodeInference,
  InferRequest,
  parseInferRequest,
  portName,
} from "./infer.ts";
import {
  INFER_REQUEST_EXAMPLE,
  INFER_RESPONSE_EXAMPLE,
  InferResponse,
  Live,
  MODEL_METADATA_EXAMPLE,
  ModelConfig,
  ModelMetadata,
  ModelReady,
  Ready,
  SERVER_METADATA_EXAMPLE,
  ServerMetadata,
  v2Errors,
  v2Json,
} from "./schemas.ts";

/** The protocol extensions nnserve implements (server metadata). */
export const V2_EXTENSIONS = [
  "binary_tensor_data",
  "system_shared_memory",
  "model_repository",
  "statistics",
  "model_configuration",
];

const NameParams = z.object({
  name: z.string().min(1).openapi({ param: { name: "name", in: "path" }, example: "adder" }),
});
const VersionParams = NameParams.extend({
  version: z.string().min(1).openapi({ param: { name: "version", in: "path" }, example: "2" }),
});

/** A route under `/v2/models/{name}` and the same under `/versions/{version}`. */
function bothPaths<R extends Omit<RouteConfig, "path" | "request">>(
  suffix: string,
  route: R,
  request: Omit<NonNullable<RouteConfig["request"]>, "params"> = {},
) {
  return [
    createRoute({
      ...route,
      path: `/v2/models/{name}${suffix}`,
      request: { ...request, params: NameParams },
    }),
    createRoute({
      ...route,
      summary: `${route.summary} (one version)`,
      path: `/v2/models/{name}/versions/{version}${suffix}`,
      request: { ...request, params: VersionParams },
    }),
  ] as const;
}

const serverMetadata = createRoute({
  method: "get",
  path: "/v2",
  summary: "Server metadata: name, version and the protocol extensions",
  responses: { 200: v2Json(ServerMetadata, "Server metadata", SERVER_METADATA_EXAMPLE) },
});

const live = createRoute({
  method: "get",
  path: "/v2/health/live",
  summary: "Server liveness",
  responses: { 200: v2Json(Live, "Live", { live: true }) },
});

const ready = createRoute({
  method: "get",
  path: "/v2/health/ready",
  summary: "Server readiness: state open and the model repository compiled",
  responses: { 200: v2Json(Ready, "Ready", { ready: true }), ...v2Errors(503) },
});

const [metadata, versionMetadata] = bothPaths("", {
  method: "get",
  summary: "Model metadata: versions, inputs and outputs",
  responses: {
    200: v2Json(ModelMetadata, "Model metadata", MODEL_METADATA_EXAMPLE),
    ...v2Errors(401, 404),
  },
});

const [modelReady, versionReady] = bothPaths("/ready", {
  method: "get",
  summary: "Model readiness: 200 when it is compiled and serves",
  responses: {
    200: v2Json(ModelReady, "Ready", { name: "adder", ready: true }),
    ...v2Errors(400, 401, 404),
  },
});

const [config, versionConfig] = bothPaths("/config", {
  method: "get",
  summary: "Model configuration (Triton's model_configuration extension)",
  responses: {
    200: v2Json(ModelConfig, "Configuration", {
      name: "adder",
      platform: "nnapi",
      backend: "nnserve",
      max_batch_size: 0,
      input: [{ name: "input0", data_type: "TYPE_FP32", dims: [2] }],
      output: [{ name: "output0", data_type: "TYPE_FP32", dims: [2] }],
    }),
    ...v2Errors(401, 404),
  },
});

const [infer, versionInfer] = bothPaths("/infer", {
  method: "post",
  summary: "Inference: JSON tensors, binary tensors after the JSON, or shared-memory regions",
  description: "The body is the inference request's JSON (any or no Content-Type, as " +
    `tritonclient sends it), or with ${INFERENCE_HEADER_LENGTH} that many bytes of JSON ` +
    "followed by the binary data of the inputs whose parameters say binary_data_size, in " +
    "request order. Outputs asked for with parameters.binary_data (or all, with the " +
    "request's binary_data_output) come back the same way.",
  responses: {
    200: {
      description: "The outputs",
      content: {
        "application/json": { schema: InferResponse, example: INFER_RESPONSE_EXAMPLE },
        [OCTET_STREAM]: {
          schema: z.string().openapi({
            format: "binary",
            description: `${INFERENCE_HEADER_LENGTH} bytes of response JSON, then the bytes ` +
              "of each output whose parameters say binary_data_size, in output order",
          }),
        },
      },
    },
    ...v2Errors(400, 401, 404, 413, 429, 504),
  },
}, {
  body: {
    required: true,
    content: {
      // By reference: a zod schema here would make the router refuse bodies without a
      // Content-Type, as tritonclient sends them. The handler validates.
      "application/json": {
        schema: { $ref: "#/components/schemas/V2InferRequest" },
        example: INFER_REQUEST_EXAMPLE,
      },
      [OCTET_STREAM]: {
        schema: z.string().openapi({
          format: "binary",
          description: `${INFERENCE_HEADER_LENGTH} bytes of request JSON, then the bytes of ` +
            "each input whose parameters say binary_data_size, in request order",
        }),
      },
    },
  },
});

/** The served version a request names (`/versions/{v}` or the default one). */
function servedFor(service: Service, c: Context): ServedVersion | Promise<ServedVersion> {
  return service.served.resolve(c.get("client"), c.req.param("name")!, c.req.param("version"));
}

/** The model metadata of the version a request names. */
async function modelMetadata(service: Service, c: Context) {
  return modelMetadataOf(service, c.get("client"), await servedFor(service, c));
}

/** The model metadata of a served version (the protocol's, over HTTP and gRPC alike). */
export async function modelMetadataOf(service: Service, client: string, served: ServedVersion) {
  const versions = await service.served.versions(client, served.name);
  const { inputs, outputs, onnx } = served.model;
  const tensors = (ports: typeof inputs, kind: "input" | "output") =>
    ports.map((port, k) => ({
      name: portName(port, kind, k),
      datatype: oipDatatype(port.type),
      shape: oipShape(port.dimensions),
    }));
  const parameters: Record<string, number> = {};
  for (const [kind, ports] of [["input", inputs], ["output", outputs]] as const) {
    for (const [k, port] of ports.entries()) {
      if (isQuantized(port.type) && port.scale !== undefined) {
        parameters[`${portName(port, kind, k)}_scale`] = port.scale;
        parameters[`${portName(port, kind, k)}_zero_point`] = port.zeroPoint ?? 0;
      }
    }
  }
  return {
    name: served.name,
    versions: versions.map((v) => v.version),
    platform: onnx ? "onnx" : "nnapi",
    inputs: tensors(inputs, "input"),
    outputs: tensors(outputs, "output"),
    ...(Object.keys(parameters).length > 0 ? { parameters } : {}),
  };
}

async function modelConfig(service: Service, c: Context) {
  return modelConfigOf(service, c.get("client"), await servedFor(service, c));
}

/** The configuration of a served version, as Triton's (over HTTP and gRPC). */
export async function modelConfigOf(service: Service, client: string, served: ServedVersion) {
  const { name, model, compilation } = served;
  const batching = compilation
    ? (await service.driver.describeCompilation(client, compilation)).batching
    : undefined;
  const tensors = (ports: typeof model.inputs, kind: "input" | "output") =>
    ports.map((port, k) => ({
      name: portName(port, kind, k),
      data_type: `TYPE_${oipDatatype(port.type)}`,
      // With batching, as Triton's: the batch extent is max_batch_size's, not the dims'.
      dims: oipShape(port.dimensions).slice(batching ? 1 : 0),
    }));
  return {
    name,
    platform: model.onnx ? "onnx" : "nnapi",
    backend: "nnserve",
    max_batch_size: batching?.maxBatchSize ?? 0,
    ...(batching
      ? {
        dynamic_batching: {
          ...(batching.preferredBatchSizes
            ? { preferred_batch_size: batching.preferredBatchSizes }
            : {}),
          max_queue_delay_microseconds: batching.maxQueueDelayUs,
          default_queue_policy: {
            max_queue_size: batching.maxQueueSize ?? DEFAULT_BATCH_QUEUE_SIZE,
          },
        },
      }
      : {}),
    input: tensors(model.inputs, "input"),
    output: tensors(model.outputs, "output"),
  };
}

/** Reads a request's JSON, and its binary part after the JSON header when it has one. */
async function readInferRequest(request: Request, limits: BodyLimits) {
  const headerLength = request.headers.get(INFERENCE_HEADER_LENGTH) ?? undefined;
  let json: unknown;
  let binary: BinarySections | undefined;
  if (headerLength !== undefined) {
    const body = await cappedBody(request, {
      bytes: limits.maxBytes,
      setting: "NNSERVE_MAX_BODY_BYTES",
    });
    const framed = splitFramedBody(body.buffer, headerLength, limits.maxJsonBytes);
    json = framed.header;
    binary = new BinarySections(framed.binary);
  } else {
    // Without a binary part the whole body is JSON, whatever its Content-Type says. One that
    // can be read at once is parsed by the runtime straight from its bytes.
    const limit = { bytes: limits.maxJsonBytes, setting: "NNSERVE_MAX_JSON_BYTES" };
    try {
      json = readableAtOnce(request, limit)
        ? await request.json()
        : JSON.parse(utf8Text(await cappedBody(request, limit)));
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      throw invalid(`the body is not JSON: ${error.message}`);
    }
  }
  const parsed = parseInferRequest(json);
  if (!parsed.success) throw schemaError(parsed.error, "request");
  return { request: parsed.data, binary };
}

/** An inference as the route receives it: the client, the model's name and version, the request. */
export interface InferenceCall {
  client: string;
  name: string;
  version?: string;
  request: Request;
}

/**
 * Runs the inference a request asks for and answers it, JSON or framed binary (for the
 * router's routes and the execution lane alike).
 */
export async function answerInference(
  service: Service,
  call: InferenceCall,
  limits: BodyLimits,
): Promise<Response> {
  const { client } = call;
  const resolving = service.served.resolve(client, call.name, call.version);
  const served = resolving instanceof Promise ? await resolving : resolving;
  const compilation = servingCompilation(served);
  const { request, binary } = await readInferRequest(call.request, limits);
  const decoded = await decodeInference(
    request,
    served.model,
    binary,
    (name) => service.driver.regions.get(client, name),
  );
  const result = await service.driver.execute(client, compilation, {
    inputs: decoded.inputs,
    outputs: decoded.outputs,
  });
  const { outputs, binary: tensors } = encodeInference(
    result,
    served.model.outputs,
    decoded.delivery,
  );
  const response = {
    model_name: served.name,
    model_version: served.version,
    ...(request.id !== undefined ? { id: request.id } : {}),
    outputs,
  };
  if (tensors.length === 0) return Response.json(response);
  return framedResponse(response, tensors);
}

/** The protocol's core routes. */
export function v2ModelRoutes(
  service: Service,
  options: { readiness: () => Readiness } & BodyLimits,
) {
  const router = newRouter();
  router.openAPIRegistry.register("V2InferRequest", InferRequest);
  router.openapi(
    serverMetadata,
    (c) => c.json({ name: "nnserve", version: DRIVER_VERSION, extensions: V2_EXTENSIONS }, 200),
  );
  router.openapi(live, (c) => c.json({ live: true }, 200));
  router.openapi(ready, (c) => {
    const state = options.readiness();
    if (!state.ready) {
      throw new DriverError("DEVICE_UNAVAILABLE", `not ready: ${state.waiting ?? "starting"}`);
    }
    return c.json({ ready: true }, 200);
  });
  for (const route of [metadata, versionMetadata]) {
    router.openapi(route, async (c) => c.json(await modelMetadata(service, c), 200));
  }
  for (const route of [config, versionConfig]) {
    router.openapi(route, async (c) => c.json(await modelConfig(service, c), 200));
  }
  for (const route of [modelReady, versionReady]) {
    router.openapi(route, async (c) => {
      const served = await servedFor(service, c);
      servingCompilation(served);
      return c.json({ name: served.name, ready: true }, 200);
    });
  }
  for (const route of [infer, versionInfer]) {
    router.openapi(route, (c) =>
      answerInference(service, {
        client: c.get("client"),
        name: c.req.param("name")!,
        version: c.req.param("version"),
        request: c.req.raw,
      }, options));
  }
  return router;
}
