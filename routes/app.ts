/**
 * The HTTP application: resource routers behind authentication, one error handler, and
 * the OpenAPI document generated from the same schemas that validate requests.
 */
import { bodyLimit } from "hono/body-limit";
import type { Driver } from "../driver/driver.ts";
import { DriverError } from "../nnapi/errors.ts";
import { type ApiKeys, authenticate } from "./auth.ts";
import { bufferRoutes } from "./buffers.ts";
import { type BurstRouteOptions, burstRoutes } from "./bursts.ts";
import { compilationRoutes } from "./compilations.ts";
import { demoRoutes } from "./demo.ts";
import { deviceRoutes } from "./devices.ts";
import { errorResponse } from "./errors.ts";
import { executionRoutes } from "./executions.ts";
import { healthRoutes } from "./health.ts";
import { memoryRoutes } from "./memories.ts";
import { modelRoutes } from "./models.ts";
import { newRouter } from "./router.ts";

/** Options of the HTTP layer. */
export interface AppOptions {
  apiKeys: ApiKeys;
  /** Largest request body accepted (bytes); larger ones get 413. */
  maxBodyBytes?: number;
  /** Burst liveness and limits. */
  bursts?: BurstRouteOptions;
}

/** Default request body limit: room for large models with inline constants. */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024 * 1024;

/** Builds the Hono app over a driver. */
export function buildApp(driver: Driver, options: AppOptions) {
  const app = newRouter();
  app.use("/v1/*", authenticate(options.apiKeys));
  const maxSize = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  app.use(
    "/v1/*",
    bodyLimit({
      maxSize,
      onError: () => {
        throw new DriverError(
          "RESOURCE_EXHAUSTED_PERSISTENT",
          `the request body is larger than ${maxSize} bytes`,
        );
      },
    }),
  );
  app.route("/", healthRoutes(driver));
  app.route("/", deviceRoutes(driver));
  app.route("/", modelRoutes(driver));
  app.route("/", compilationRoutes(driver));
  app.route("/", executionRoutes(driver));
  app.route("/", memoryRoutes(driver));
  app.route("/", bufferRoutes(driver));
  app.route("/", burstRoutes(driver, options.bursts ?? { idleTimeoutSeconds: 4 }));
  app.route("/", demoRoutes());
  app.doc31("/openapi.json", {
    openapi: "3.1.0",
    info: {
      title: "nnserve",
      version: "1",
      description: "The Android Neural Networks API driver contract (HAL 1.0-1.3) over HTTP",
    },
  });
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", {
    type: "http",
    scheme: "bearer",
  });
  app.notFound((c) =>
    errorResponse(c, new DriverError("NOT_FOUND", `no route ${c.req.method} ${c.req.path}`))
  );
  app.onError((error, c) => errorResponse(c, error));
  return app;
}
