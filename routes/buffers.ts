/** Memory-domain routes: allocate driver-managed buffers, copy to/from memories, free. */
import { createRoute } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { newRouter } from "./router.ts";
import { BUFFER, BUFFER_REQUEST, COPY_REQUEST } from "./examples.ts";
import {
  BufferBody,
  BufferRequest,
  CompilationIdParams,
  CopyRequest,
  errorResponses,
  jsonBody,
  jsonResponse,
  TokenParams,
} from "./schemas.ts";

const allocateBuffer = createRoute({
  method: "post",
  path: "/v1/compilations/{id}/buffers",
  summary: "Allocate a driver-managed buffer for roles of a compilation",
  request: {
    params: CompilationIdParams,
    ...jsonBody(BufferRequest, { example: BUFFER_REQUEST }),
  },
  responses: {
    201: jsonResponse(BufferBody, "The buffer", { example: BUFFER }),
    ...errorResponses(400, 401, 404),
  },
});

const copyFrom = createRoute({
  method: "post",
  path: "/v1/buffers/{token}/copy-from",
  summary: "Fill a buffer from a memory of exactly its size",
  request: { params: TokenParams, ...jsonBody(CopyRequest, { example: COPY_REQUEST }) },
  responses: { 204: { description: "Copied" }, ...errorResponses(400, 401, 404) },
});

const copyTo = createRoute({
  method: "post",
  path: "/v1/buffers/{token}/copy-to",
  summary: "Copy a buffer's contents into a memory of exactly their size",
  request: { params: TokenParams, ...jsonBody(CopyRequest, { example: COPY_REQUEST }) },
  responses: { 204: { description: "Copied" }, ...errorResponses(400, 401, 404) },
});

const freeBuffer = createRoute({
  method: "delete",
  path: "/v1/buffers/{token}",
  summary: "Free a buffer",
  request: { params: TokenParams },
  responses: { 204: { description: "Freed" }, ...errorResponses(401, 404) },
});

/** Buffer routes. */
export function bufferRoutes(driver: Driver) {
  return newRouter()
    .openapi(allocateBuffer, async (c) => {
      const { id } = c.req.valid("param");
      return c.json(await driver.allocateBuffer(c.get("client"), id, c.req.valid("json")), 201);
    })
    .openapi(copyFrom, async (c) => {
      const { token } = c.req.valid("param");
      await driver.copyMemoryToBuffer(c.get("client"), token, c.req.valid("json").memory);
      return c.body(null, 204);
    })
    .openapi(copyTo, async (c) => {
      const { token } = c.req.valid("param");
      await driver.copyBufferToMemory(c.get("client"), token, c.req.valid("json").memory);
      return c.body(null, 204);
    })
    .openapi(freeBuffer, (c) => {
      driver.deleteBuffer(c.get("client"), c.req.valid("param").token);
      return c.body(null, 204);
    });
}
