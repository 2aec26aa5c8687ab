/** Operational routes: liveness, readiness and Prometheus metrics. */
import { createRoute, z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import type { RepositoryEntry } from "../serving/model_repository.ts";
import { EXAMPLE_IDS } from "./examples.ts";
import { newRouter } from "./router.ts";
import { ErrorBody, jsonResponse } from "./schemas.ts";

/** Whether the service is ready, and how the model repository's entries fared. */
export interface Readiness {
  ready: boolean;
  /** Why it is not ready yet. */
  waiting?: string;
  repository?: RepositoryEntry[];
}

const Ok = z.object({ status: z.literal("ok") });

/** The one answer of `/healthz` and `/livez`. */
const serving = jsonResponse(Ok, "Serving", { example: { status: "ok" } });

const health = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Liveness: 200 while serving (as /livez)",
  responses: { 200: serving },
});

const live = createRoute({
  method: "get",
  path: "/livez",
  summary: "Liveness: 200 while the process serves HTTP",
  responses: { 200: serving },
});

const RepositoryEntryBody = z.object({
  name: z.string(),
  version: z.string(),
  state: z.enum(["ready", "failed"]),
  error: z.string().optional(),
  clients: z.array(z.object({ client: z.string(), model: z.string(), compilation: z.string() })),
});

const ready = createRoute({
  method: "get",
  path: "/readyz",
  summary: "Readiness: 200 once state is open and the model repository's models are compiled",
  responses: {
    200: jsonResponse(
      z.object({
        status: z.literal("ready"),
        replica: z.string().openapi({ description: "The replica that answered" }),
        repository: z.array(RepositoryEntryBody).optional(),
      }),
      "Ready; how each repository entry fared (a failed one does not hold readiness back)",
      {
        example: {
          status: "ready",
          replica: "nnserve-0",
          repository: [{
            name: "add",
            version: "1",
            state: "ready",
            clients: [{
              client: "anonymous",
              model: EXAMPLE_IDS.model,
              compilation: EXAMPLE_IDS.compilation,
            }],
          }],
        },
      },
    ),
    503: jsonResponse(ErrorBody, "Not ready yet (RESOURCE_EXHAUSTED_TRANSIENT, Retry-After)", {
      example: {
        status: "RESOURCE_EXHAUSTED_TRANSIENT",
        message: "not ready: loading the model repository /models",
      },
    }),
  },
});

/** An excerpt of `/metrics`: a counter, a gauge and one series of a histogram. */
const METRICS_EXAMPLE = [
  "# HELP nnserve_executions_total Executions by status",
  "# TYPE nnserve_executions_total counter",
  'nnserve_executions_total{status="NONE"} 2',
  'nnserve_executions_total{status="INVALID_ARGUMENT"} 0',
  "# HELP nnserve_executions_queued Executions waiting for a worker",
  "# TYPE nnserve_executions_queued gauge",
  "nnserve_executions_queued 0",
  "# HELP nnserve_http_request_duration_seconds HTTP request duration by method, route and status",
  "# TYPE nnserve_http_request_duration_seconds histogram",
  'nnserve_http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="0.001"} 0',
  'nnserve_http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="+Inf"} 1',
  'nnserve_http_request_duration_seconds_sum{method="GET",route="/healthz",status="200"} 0.0023',
  'nnserve_http_request_duration_seconds_count{method="GET",route="/healthz",status="200"} 1',
  "",
].join("\n");

const metrics = createRoute({
  method: "get",
  path: "/metrics",
  summary: "Prometheus metrics",
  responses: {
    200: {
      description: "Prometheus text format",
      content: {
        "text/plain": {
          schema: z.string().openapi({
            description: "The Prometheus text exposition format, version 0.0.4 (Content-Type " +
              "text/plain; version=0.0.4): HELP, TYPE and sample lines of every series",
          }),
          example: METRICS_EXAMPLE,
        },
      },
    },
  },
});

/** Health, readiness and metrics routes (no authentication). */
export function healthRoutes(driver: Driver, readiness: () => Readiness) {
  return newRouter()
    .openapi(health, (c) => c.json({ status: "ok" as const }, 200))
    .openapi(live, (c) => c.json({ status: "ok" as const }, 200))
    .openapi(ready, (c) => {
      const state = readiness();
      if (!state.ready) {
        c.header("Retry-After", "1");
        return c.json({
          status: "RESOURCE_EXHAUSTED_TRANSIENT" as const,
          message: `not ready: ${state.waiting ?? "starting"}`,
        }, 503);
      }
      const repository = state.repository ? { repository: state.repository } : {};
      return c.json({ status: "ready" as const, replica: driver.replica, ...repository }, 200);
    })
    .openapi(
      metrics,
      async (c) =>
        c.text(await driver.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4" }),
    );
}
