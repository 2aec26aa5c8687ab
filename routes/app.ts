/**
 * The HTTP application: resource routers behind authentication, one error handler, and
 * the OpenAPI document generated from the same schemas that validate requests.
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Service } from "../serving/service.ts";
import { DriverError } from "../nnapi/errors.ts";
import { type ApiKeys, authenticate } from "./auth.ts";
import { JSON_MEDIA_TYPE } from "./schemas.ts";
import { bufferRoutes } from "./buffers.ts";
import { type BurstRouteOptions, burstRoutes } from "./bursts.ts";
import { compilationRoutes } from "./compilations.ts";
import { demoRoutes } from "./demo.ts";
import { rootRoutes } from "./root.ts";
import { deviceRoutes } from "./devices.ts";
import { errorResponse } from "./errors.ts";
import { executionRoutes } from "./executions.ts";
import { healthRoutes, type Readiness } from "./health.ts";
import { accessLog, type LogLevel, type LogSink, RequestLog } from "./access_log.ts";
import { type BodyLimits, bodyTooLarge, inflatedRequest } from "./request_body.ts";
import { executionLane } from "./execution_lane.ts";
import { serveOpenApi } from "./openapi.ts";
import { cors } from "hono/cors";
import { memoryRoutes } from "./memories.ts";
import { modelRoutes } from "./models.ts";
import { newRouter } from "./router.ts";
import { v2ModelRoutes } from "./v2/models.ts";
import { v2RepositoryRoutes } from "./v2/repository.ts";
import { v2SharedMemoryRoutes } from "./v2/shared_memory.ts";

/** Options of the HTTP layer. */
export interface AppOptions {
  apiKeys: ApiKeys;
  /** Largest request body accepted (bytes); larger ones get 413. */
  maxBodyBytes?: number;
  /** Largest JSON request body (bytes), at most `maxBodyBytes`; larger ones get 413. */
  maxJsonBytes?: number;
  /** Burst liveness and limits. */
  bursts?: BurstRouteOptions;
  /** Whether the service is ready (`/readyz`); ready from the start when absent. */
  readiness?: () => Readiness;
  /** The access log's level and sink (default: off). */
  log?: { level: LogLevel; sink: LogSink };
  /**
   * Origins browser apps may call from (NNSERVE_CORS_ORIGINS): `*`, or exact origins; none
   * (the default) sends no CORS headers.
   */
  corsOrigins?: readonly string[];
  /**
   * Whether executions take the lane past the router (routes/execution_lane.ts); on unless
   * CORS is. Off only to compare the two.
   */
  executionLane?: boolean;
  /** The model repository directory (NNSERVE_MODEL_REPOSITORY), which `/v2` load re-reads. */
  modelRepository?: string;
  /** The largest repository file `/v2` load reads (NNSERVE_REPOSITORY_MAX_FILE_BYTES). */
  repositoryMaxFileBytes?: number;
}

/** `/v2` routes that need no API key: server metadata and health, as the protocol's probes. */
const OPEN_V2 = /^\/v2(\/health\/(live|ready))?\/?$/;

/** Default request body limit: room for large memories and ONNX files (raw bytes). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 * 1024;

/**
 * Default JSON body limit. A JSON body is parsed whole and its numbers become JS values:
 * memory grows several times the body size (a 66 MB body took the process from 117 to
 * 663 MB). 64 MiB still holds a MobileNet-sized float model with its weights inline (about
 * 23 MB as base64, 40 MB as JSON numbers); larger data belongs in a memory (octet-stream)
 * referenced by `location` or `{memory, offset, length}`.
 */
export const DEFAULT_MAX_JSON_BYTES = 64 * 1024 * 1024;

/** 413 RESOURCE_EXHAUSTED_PERSISTENT past the limit of the body's kind (JSON or other). */
function bodyLimits(limits: BodyLimits): MiddlewareHandler {
  const limit = (isJson: boolean) =>
    bodyLimit({
      maxSize: isJson ? limits.maxJsonBytes : limits.maxBytes,
      onError: () => {
        throw bodyTooLarge(limits, isJson);
      },
    });
  const [json, other] = [limit(true), limit(false)];
  return (c, next) => {
    const isJson = JSON_MEDIA_TYPE.test(c.req.header("content-type") ?? "");
    // A declared length is checked from the header alone: touching the request's body
    // (as Hono's bodyLimit does first) makes Deno hand it over as a stream, which costs
    // every request several microseconds more to read.
    const declared = c.req.header("content-length");
    if (declared !== undefined && c.req.header("transfer-encoding") === undefined) {
      if (Number(declared) > (isJson ? limits.maxJsonBytes : limits.maxBytes)) {
        throw bodyTooLarge(limits, isJson);
      }
      return next();
    }
    return isJson ? json(c, next) : other(c, next);
  };
}

/** Builds the Hono app over a service (its driver, and what the service adds). */
export function buildApp(service: Service, options: AppOptions) {
  const { driver } = service;
  const app = newRouter();
  const log = new RequestLog(driver.metrics, {
    ...options.log ?? { level: "off", sink: () => {} },
    replica: driver.replica,
  });
  app.use("*", accessLog(log));
  const origins = options.corsOrigins ?? [];
  if (origins.length > 0) {
    app.use(
      "*",
      cors({
        origin: origins.includes("*") ? "*" : [...origins],
        allowHeaders: [
          "Authorization",
          "Content-Type",
          "Inference-Header-Content-Length",
          "X-Request-Id",
          "Input-Dimensions",
          "Range",
        ],
        exposeHeaders: [
          "Location",
          "Retry-After",
          "X-Request-Id",
          "X-Nnserve-Replica",
          "Output-Dimensions",
          "Output-Name",
          "Inference-Header-Content-Length",
          "Server-Timing",
          "Content-Range",
        ],
        maxAge: 600,
      }),
    );
  }
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const maxJsonBytes = Math.min(options.maxJsonBytes ?? DEFAULT_MAX_JSON_BYTES, maxBodyBytes);
  const auth = authenticate(options.apiKeys);
  app.use("/v1/*", auth);
  app.use("/v2/*", (c, next) => OPEN_V2.test(c.req.path) ? next() : auth(c, next));
  const limits: BodyLimits = { maxBytes: maxBodyBytes, maxJsonBytes };
  app.use("*", bodyLimits(limits));
  app.use("*", async (c, next) => {
    c.req.raw = await inflatedRequest(c.req.raw, limits);
    await next();
  });
  const readiness = options.readiness ?? (() => ({ ready: true }));
  app.route("/", rootRoutes());
  app.route("/", healthRoutes(driver, readiness, auth));
  app.route("/", deviceRoutes(driver));
  app.route("/", modelRoutes(service));
  app.route("/", compilationRoutes(driver));
  app.route("/", executionRoutes(driver, { maxJsonBytes }));
  app.route("/", memoryRoutes(driver));
  app.route("/", bufferRoutes(driver));
  app.route("/", burstRoutes(driver, options.bursts ?? { idleTimeoutSeconds: 4 }));
  // The statistics routes first: `/v2/models/stats` is not a model named "stats".
  app.route(
    "/",
    v2RepositoryRoutes(service, {
      readiness,
      modelRepository: options.modelRepository,
      maxFileBytes: options.repositoryMaxFileBytes ?? maxBodyBytes,
    }),
  );
  app.route("/", v2ModelRoutes(service, { readiness, ...limits }));
  app.route("/", v2SharedMemoryRoutes(driver));
  app.route("/", demoRoutes());
  serveOpenApi(app);
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  app.notFound((c) =>
    errorResponse(c, new DriverError("NOT_FOUND", `no route ${c.req.method} ${c.req.path}`))
  );
  app.onError((error, c) => {
    driver.countRefusal(error);
    return errorResponse(c, error);
  });
  if (origins.length === 0 && options.executionLane !== false) {
    const lane = executionLane({ service, log, keys: options.apiKeys, limits });
    const routed = app.fetch;
    app.fetch = (request, env, context) => lane(request) ?? routed(request, env, context);
  }
  return app;
}
