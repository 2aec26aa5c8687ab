/** `GET /v1/devices`: the driver's devices and capabilities. */
import { createRoute } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { newRouter } from "./router.ts";
import { DEVICES } from "./examples.ts";
import { DevicesBody, errorResponses, jsonResponse } from "./schemas.ts";

const listDevices = createRoute({
  method: "get",
  path: "/v1/devices",
  summary: "List devices with capabilities and supported operations",
  responses: {
    200: jsonResponse(DevicesBody, "The devices", { example: DEVICES }),
    ...errorResponses(401),
  },
});

/** Device routes. */
export function deviceRoutes(driver: Driver) {
  return newRouter().openapi(
    listDevices,
    (c) => c.json({ devices: driver.deviceInfos(), replica: driver.replica }, 200),
  );
}
