/** Model routes: register, describe, delete, supported operations. */
import { createRoute } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { ModelSchema } from "../driver/model_schema.ts";
import { newRouter } from "./router.ts";
import {
  errorResponses,
  IdParams,
  jsonBody,
  jsonResponse,
  ModelInfoBody,
  SupportedOperationsBody,
  SupportedOperationsRequest,
} from "./schemas.ts";

const registerModel = createRoute({
  method: "post",
  path: "/v1/models",
  summary: "Register (validate and store) an NNAPI model",
  request: jsonBody(ModelSchema),
  responses: {
    201: jsonResponse(ModelInfoBody, "The registered model"),
    ...errorResponses(400, 401),
  },
});

const getModel = createRoute({
  method: "get",
  path: "/v1/models/{id}",
  summary: "A registered model's metadata",
  request: { params: IdParams },
  responses: { 200: jsonResponse(ModelInfoBody, "The model"), ...errorResponses(401, 404) },
});

const deleteModel = createRoute({
  method: "delete",
  path: "/v1/models/{id}",
  summary: "Delete a model (compilations of it keep working)",
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(401, 404) },
});

const supportedOperations = createRoute({
  method: "post",
  path: "/v1/models/{id}/supported-operations",
  summary: "Which operations each device supports (NNAPI getSupportedOperations)",
  request: { params: IdParams, ...jsonBody(SupportedOperationsRequest) },
  responses: {
    200: jsonResponse(SupportedOperationsBody, "Support per device, in model order"),
    ...errorResponses(400, 401, 404),
  },
});

/** Model routes. */
export function modelRoutes(driver: Driver) {
  return newRouter()
    .openapi(registerModel, async (c) => {
      return c.json(await driver.registerModel(c.get("client"), c.req.valid("json")), 201);
    })
    .openapi(getModel, async (c) => {
      return c.json(await driver.getModel(c.get("client"), c.req.valid("param").id), 200);
    })
    .openapi(deleteModel, async (c) => {
      await driver.deleteModel(c.get("client"), c.req.valid("param").id);
      return c.body(null, 204);
    })
    .openapi(supportedOperations, async (c) => {
      const { devices } = c.req.valid("json");
      const id = c.req.valid("param").id;
      return c.json(
        { devices: await driver.supportedOperations(c.get("client"), id, devices) },
        200,
      );
    });
}
