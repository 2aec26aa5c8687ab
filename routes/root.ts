/**
 * `GET /`: what a newcomer pointing a browser or curl at the service first sees, a short
 * index of where to go next (no API key needed; it names no client's objects).
 */
import { createRoute, z } from "@hono/zod-openapi";
import { DRIVER_VERSION } from "../driver/compilation/plan_codec.ts";
import { newRouter } from "./router.ts";
import { jsonResponse } from "./schemas.ts";

/** The service's entry points, by what they are for. */
export const ROOT_LINKS = {
  openapi: "/openapi.json",
  devices: "/v1/devices",
  models: "/v1/models",
  compilations: "/v1/compilations",
  kserveV2: "/v2",
  demo: "/demo",
  metrics: "/metrics",
  ready: "/readyz",
} as const;

const RootBody = z.object({
  name: z.literal("nnserve"),
  version: z.string(),
  description: z.string(),
  links: z.record(z.string(), z.string()),
}).openapi("Root");

const root = createRoute({
  method: "get",
  path: "/",
  summary: "An index of the service's entry points",
  responses: {
    200: jsonResponse(RootBody, "The index", {
      example: {
        name: "nnserve",
        version: "nnserve/plan-7/…",
        description: "NNAPI's driver contract and ONNX models over HTTP",
        links: ROOT_LINKS,
      },
    }),
  },
});

/** The index route. */
export function rootRoutes() {
  return newRouter().openapi(root, (c) =>
    c.json({
      name: "nnserve" as const,
      version: DRIVER_VERSION,
      description: "NNAPI's driver contract and ONNX models over HTTP, WebSocket bursts and " +
        "KServe v2; the HTTP API: /openapi.json",
      links: { ...ROOT_LINKS },
    }, 200));
}
