/** Operational routes: liveness, readiness and Prometheus metrics. */
import { createRoute, z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import type { RepositoryEntry } from "../driver/model_repository.ts";
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

const health = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Liveness: 200 while serving (as /livez)",
  responses: { 200: jsonResponse(Ok, "Serving") },
});

const live = createRoute({
  method: "get",
  path: "/livez",
  summary: "Liveness: 200 while the process serves HTTP",
  responses: { 200: jsonResponse(Ok, "Serving") },
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
      z.object({ status: z.literal("ready"), repository: z.array(RepositoryEntryBody).optional() }),
      "Ready; how each repository entry fared (a failed one does not hold readiness back)",
    ),
    503: jsonResponse(ErrorBody, "Not ready yet (RESOURCE_EXHAUSTED_TRANSIENT, Retry-After)"),
  },
});

const metrics = createRoute({
  method: "get",
  path: "/metrics",
  summary: "Prometheus metrics",
  responses: {
    200: {
      description: "Prometheus text format",
      content: { "text/plain": { schema: z.string() } },
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
      return c.json({ status: "ready" as const, ...repository }, 200);
    })
    .openapi(
      metrics,
      async (c) =>
        c.text(await driver.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4" }),
    );
}
