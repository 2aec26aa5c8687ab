/**
 * Operational routes: liveness, readiness and Prometheus metrics. They need no API key, so
 * `/readyz` tells a probe without one whether the service is ready and how many repository
 * entries are ready or failed, and no more: which entries, their failure reasons and the
 * model and compilation ids are for a client that shows its key (or every caller when the
 * service runs open), and then only that client's.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { Driver } from "../driver/driver.ts";
import { DriverError } from "../nnapi/errors.ts";
import type { RepositoryEntry } from "../serving/model_repository.ts";
import { EXAMPLE_IDS } from "./examples.ts";
import { type AppEnv, newRouter } from "./router.ts";
import { ErrorBody, jsonResponse } from "./schemas.ts";

/** Whether the service is ready, and how the model repository's entries fared. */
export interface Readiness {
  ready: boolean;
  /** Why it is not ready yet (shown to anyone: no file content, no client names). */
  waiting?: string;
  repository?: RepositoryEntry[];
}

/** The client a request's API key names (every caller, when the service runs open), if any. */
async function probeClient(
  c: Context<AppEnv>,
  authenticate: MiddlewareHandler<AppEnv>,
): Promise<string | undefined> {
  let client: string | undefined;
  try {
    await authenticate(c, () => {
      client = c.get("client");
      return Promise.resolve();
    });
  } catch (error) {
    if (error instanceof DriverError && error.status === "UNAUTHORIZED") return undefined;
    throw error;
  }
  return client;
}

/** The repository entries as `client` may see them: its own model and compilation ids. */
function entriesOf(repository: RepositoryEntry[], client: string): RepositoryEntry[] {
  return repository.map((e) => ({ ...e, clients: e.clients.filter((c) => c.client === client) }));
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

/** What a degraded replica says it can and cannot do. */
const DEGRADED = "the state store is unreachable: compilations this replica holds run; " +
  "requests that need the state store get 503 with Retry-After";

const EntryCounts = z.object({ ready: z.number().int(), failed: z.number().int() }).openapi({
  description: "How many repository entries are ready and how many failed",
});

const ready = createRoute({
  method: "get",
  path: "/readyz",
  summary: "Readiness: 200 once state is open and the model repository's models are compiled",
  description: "Needs no API key. Without one (or with one that is not valid) it says only " +
    "whether the service is ready, which replica answered and how many repository entries " +
    "are ready or failed. With a valid key (`Authorization: Bearer`), or from anyone when the " +
    "service runs open, it also lists the entries: their state, a failed one's reason, and " +
    "that client's own model and compilation ids. With PostgreSQL unreachable it is 200 " +
    "`degraded` while the replica holds compilations (they still run, so a balancer keeps " +
    "sending their executions), and 503 when it holds none.",
  responses: {
    200: jsonResponse(
      z.object({
        status: z.enum(["ready", "degraded"]).openapi({
          description: "`degraded`: the state store (PostgreSQL) is unreachable, but this " +
            "replica holds prepared compilations, which still run",
        }),
        replica: z.string().openapi({ description: "The replica that answered" }),
        degraded: z.string().optional().openapi({ description: "What works while degraded" }),
        entries: EntryCounts.optional(),
        repository: z.array(RepositoryEntryBody).optional().openapi({
          description: "Only for a request with a valid API key (or when the service runs " +
            "open): each entry, with that client's model and compilation ids",
        }),
      }),
      "Ready; how the repository's entries fared (a failed one does not hold readiness back)",
      {
        example: {
          status: "ready",
          replica: "nnserve-0",
          entries: { ready: 1, failed: 0 },
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

/**
 * Health, readiness and metrics routes (no authentication required); `authenticate` is the
 * API-key check of `/v1` and `/v2` (routes/auth.ts), which tells `/readyz` whose repository
 * entries it may show.
 */
export function healthRoutes(
  driver: Driver,
  readiness: () => Readiness,
  authenticate: MiddlewareHandler<AppEnv>,
) {
  return newRouter()
    .openapi(health, (c) => c.json({ status: "ok" as const }, 200))
    .openapi(live, (c) => c.json({ status: "ok" as const }, 200))
    .openapi(ready, async (c) => {
      const state = readiness();
      const notReady = (why: string) => {
        c.header("Retry-After", "1");
        return c.json({
          status: "RESOURCE_EXHAUSTED_TRANSIENT" as const,
          message: `not ready: ${why}`,
        }, 503);
      };
      if (!state.ready) return notReady(state.waiting ?? "starting");
      const { stateReachable, liveCompilations } = await driver.condition();
      if (!stateReachable && liveCompilations === 0) {
        return notReady("the state store is unreachable and this replica holds no compilation");
      }
      const answer = stateReachable
        ? { status: "ready" as const, replica: driver.replica }
        : { status: "degraded" as const, replica: driver.replica, degraded: DEGRADED };
      const repository = state.repository;
      if (!repository) return c.json(answer, 200);
      const failed = repository.filter((e) => e.state === "failed").length;
      const entries = { ready: repository.length - failed, failed };
      const client = await probeClient(c, authenticate);
      if (client === undefined) return c.json({ ...answer, entries }, 200);
      return c.json({ ...answer, entries, repository: entriesOf(repository, client) }, 200);
    })
    .openapi(
      metrics,
      async (c) =>
        c.text(await driver.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4" }),
    );
}
