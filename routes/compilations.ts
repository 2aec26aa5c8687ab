/** Compilation routes: prepare, describe (with the plan) and delete (NNAPI prepareModel). */
import { createRoute } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { newRouter } from "./router.ts";
import {
  COMPILATION,
  COMPILATION_DESCRIPTION,
  COMPILATION_LIST,
  COMPILATION_REQUEST,
} from "./examples.ts";
import {
  CompilationBody,
  CompilationDescriptionBody,
  CompilationIdParams,
  CompilationListBody,
  CompilationListQuery,
  CompilationRequest,
  errorResponses,
  jsonBody,
  jsonResponse,
  LOCATION_HEADER,
} from "./schemas.ts";

const createCompilation = createRoute({
  method: "post",
  path: "/v1/compilations",
  summary: "Prepare a registered model for execution",
  request: jsonBody(CompilationRequest, { example: COMPILATION_REQUEST }),
  responses: {
    201: {
      ...jsonResponse(CompilationBody, "The prepared compilation", { example: COMPILATION }),
      headers: LOCATION_HEADER,
    },
    ...errorResponses(400, 401, 404, 504),
  },
});

const listCompilations = createRoute({
  method: "get",
  path: "/v1/compilations",
  summary: "This client's compilations, a page at a time, of one model when given",
  request: { query: CompilationListQuery },
  responses: {
    200: jsonResponse(CompilationListBody, "A page of compilations (without their plans)", {
      example: COMPILATION_LIST,
    }),
    ...errorResponses(400, 401),
  },
});

const describeCompilation = createRoute({
  method: "get",
  path: "/v1/compilations/{id}",
  summary: "A compilation and its plan: which device runs which operations",
  request: { params: CompilationIdParams },
  responses: {
    200: jsonResponse(CompilationDescriptionBody, "The compilation", {
      example: COMPILATION_DESCRIPTION,
    }),
    ...errorResponses(401, 404),
  },
});

const deleteCompilation = createRoute({
  method: "delete",
  path: "/v1/compilations/{id}",
  summary: "Release a compilation",
  request: { params: CompilationIdParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(401, 404) },
});

/** Compilation routes. */
export function compilationRoutes(driver: Driver) {
  return newRouter()
    .openapi(createCompilation, async (c) => {
      const { cache, ...request } = c.req.valid("json");
      const cacheToken = cache ? Uint8Array.fromBase64(cache.token) : undefined;
      const info = await driver.createCompilation(c.get("client"), { ...request, cacheToken });
      c.header("Location", `/v1/compilations/${info.id}`);
      return c.json(info, 201);
    })
    .openapi(listCompilations, async (c) => {
      const { limit = 100, ...query } = c.req.valid("query");
      return c.json(await driver.listCompilations(c.get("client"), { ...query, limit }), 200);
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
