/**
 * The OpenAPI document (`GET /openapi.json`), generated from the routes' schemas and
 * completed once: every operation gets an operationId (its method and path), a tag (the
 * resource it acts on) and its security (the bearer scheme at the root; none for the
 * operational routes, which need no key), so the document passes Redocly's recommended rules.
 */
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "./router.ts";

/** Tags by the first path segment after the version (or the path's own first segment). */
const TAGS: Record<string, string> = {
  devices: "The driver's devices and their capabilities",
  models: "NNAPI models: register (JSON or ONNX), list, describe, delete, supported operations",
  compilations: "Prepared models: compile, list, describe, delete; executions, buffers, bursts",
  memories: "Shared memory pools",
  buffers: "Driver-managed buffers (memory domains)",
  operations: "Liveness, readiness, metrics and this document",
  demo: "The camera demo page",
  v2: "The Open Inference Protocol (KServe v2 REST) with Triton's binary tensor, shared-memory, " +
    'repository, statistics and model configuration extensions; errors as {"error"}',
};

/** Routes that need no API key. */
const OPEN = /^\/($|healthz|livez|readyz|metrics|openapi\.json|demo|v2$|v2\/health\/)/;

type Operation = Record<string, unknown>;

/** `post /v1/compilations/{id}/executions` -> `postCompilationsByIdExecutions`. */
function operationId(method: string, path: string): string {
  const words = path.split("/").filter((p) => p && p !== "v1").map((part) => {
    const name = part.startsWith("{") ? `By-${part.slice(1, -1)}` : part;
    return name.split(/[^A-Za-z0-9]+/).filter(Boolean)
      .map((w) => w[0].toUpperCase() + w.slice(1)).join("");
  });
  return method + words.join("");
}

function tagOf(path: string): string {
  const [first, second] = path.split("/").filter(Boolean);
  const resource = first === "v1" ? second : first;
  if (first === "v2") return "v2";
  if (resource === "demo") return "demo";
  return resource in TAGS ? resource : "operations";
}

/** The completed document of `app`. */
export function openApiDocument(app: OpenAPIHono<AppEnv>): Record<string, unknown> {
  const doc = app.getOpenAPI31Document({
    openapi: "3.1.0",
    info: {
      title: "nnserve",
      version: "1",
      description: "The Android Neural Networks API driver contract (HAL 1.0-1.3) over HTTP",
    },
    servers: [{ url: "/", description: "This service" }],
  }) as unknown as { paths: Record<string, Record<string, Operation>> } & Record<string, unknown>;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      operation.operationId ??= operationId(method, path);
      operation.tags ??= [tagOf(path)];
      if (OPEN.test(path)) operation.security = [];
    }
  }
  return {
    ...doc,
    security: [{ bearer: [] }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
  };
}

/** Serves the completed document at `/openapi.json` (built on first request). */
export function serveOpenApi(app: OpenAPIHono<AppEnv>): void {
  let document: Record<string, unknown> | undefined;
  app.get("/openapi.json", (c) => c.json(document ??= openApiDocument(app)));
}
