/** Compilation routes: prepare and delete (NNAPI prepareModel). */
import { createRoute } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { newRouter } from "./router.ts";
import {
  CompilationBody,
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
    .openapi(deleteCompilation, async (c) => {
      await driver.deleteCompilation(c.get("client"), c.req.valid("param").id);
      return c.body(null, 204);
    });
}
