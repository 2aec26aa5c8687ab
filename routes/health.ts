/** Operational routes: liveness and Prometheus metrics. */
import { createRoute, z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { newRouter } from "./router.ts";
import { jsonResponse } from "./schemas.ts";

const health = createRoute({
  method: "get",
  path: "/healthz",
  summary: "Liveness: 200 while serving",
  responses: { 200: jsonResponse(z.object({ status: z.literal("ok") }), "Serving") },
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

/** Health and metrics routes (no authentication). */
export function healthRoutes(driver: Driver) {
  return newRouter()
    .openapi(health, (c) => c.json({ status: "ok" as const }, 200))
    .openapi(
      metrics,
      (c) => c.text(driver.metrics.render(), 200, { "content-type": "text/plain; version=0.0.4" }),
    );
}
