/** Compilation routes: prepare, describe (with the plan) and delete (NNAPI prepareModel). */
import { createRoute } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { newRouter } from "./router.ts";
import {
  CompilationBody,
  CompilationDescriptionBody,
  CompilationRequest,
  errorResponses,
  IdParams,
  jsonBody,
  jsonResponse,
} from "./schemas.ts";

const createCompilation = createRoute({
  method: "post",
  path: "/v1/compilations",
  summary: "Prepare a registered model for execution",
  request: jsonBody(CompilationRequest),
  responses: {
    201: jsonResponse(CompilationBody, "The prepared compilation"),
    ...errorResponses(400, 401, 404, 504),
  },
});

const describeCompilation = createRoute({
  method: "get",
  path: "/v1/compilations/{id}",
  summary: "A compilation and its plan: which device runs which operations",
  request: { params: IdParams },
  responses: {
    200: jsonResponse(CompilationDescriptionBody, "The compilation"),
    ...errorResponses(401, 404),
  },
});

const deleteCompilation = createRoute({
  method: "delete",
  path: "/v1/compilations/{id}",
  summary: "Release a compilation",
  request: { params: IdParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(401, 404) },
});

/** Compilation routes. */
export function compilationRoutes(driver: Driver) {
  return newRouter()
    .openapi(createCompilation, async (c) => {
      const { cache, ...request } = c.req.valid("json");
      const cacheToken = cache ? Uint8Array.fromBase64(cache.token) : undefined;
      return c.json(
        await driver.createCompilation(c.get("client"), { ...request, cacheToken }),
        201,
      );
    })
    .openapi(describeCompilation, async (c) => {
      return c.json(
        await driver.describeCompilation(c.get("client"), c.req.valid("param").id),
        200,
      );
    })
    .openapi(deleteCompilation, async (c) => {
      await driver.deleteCompilation(c.get("client"), c.req.valid("param").id);
      return c.body(null, 204);
    });
}
