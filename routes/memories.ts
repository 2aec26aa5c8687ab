/** Memory pool routes: create (bytes or size), read (with Range), write at an offset, delete. */
import { createRoute, z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../nnapi/errors.ts";
import { newRouter } from "./router.ts";
import { schemaError } from "./errors.ts";
import { MEMORY, MEMORY_SIZE_REQUEST } from "./examples.ts";
import {
  errorResponses,
  jsonResponse,
  LOCATION_HEADER,
  MemoryBody,
  MemoryIdParams,
  MemorySizeRequest,
  OffsetQuery,
} from "./schemas.ts";

/** A body of a memory's raw bytes, saying which bytes. */
function octetStream(description: string) {
  return {
    "application/octet-stream": { schema: z.string().openapi({ format: "binary", description }) },
  };
}

const createMemory = createRoute({
  method: "post",
  path: "/v1/memories",
  summary: "Create a shared memory pool from bytes, or zero-filled of a size",
  request: {
    body: {
      content: {
        ...octetStream("The memory's initial contents, as many bytes as it is to hold"),
        "application/json": { schema: MemorySizeRequest, example: MEMORY_SIZE_REQUEST },
      },
      // Not `required`: the validator would then parse every body as JSON; the handler
      // tells the two content types apart.
      required: false,
    },
  },
  responses: {
    201: {
      ...jsonResponse(MemoryBody, "The memory", { example: MEMORY }),
      headers: LOCATION_HEADER,
    },
    ...errorResponses(400, 401, 413),
  },
});

const readMemory = createRoute({
  method: "get",
  path: "/v1/memories/{id}",
  summary: "Read a memory's bytes (honours Range: bytes=a-b)",
  request: {
    params: MemoryIdParams,
    headers: z.object({
      range: z.string().optional().openapi({
        description:
          "One byte range (bytes=a-b, bytes=a- or bytes=-n): answer 206 with those bytes",
        param: { example: "bytes=0-3" },
      }),
    }),
  },
  responses: {
    200: {
      description: "The bytes",
      headers: z.object({ "Accept-Ranges": z.literal("bytes") }),
      content: octetStream("All of the memory's bytes, as stored"),
    },
    206: {
      description: "The requested range",
      headers: z.object({
        "Content-Range": z.string().openapi({
          description: "bytes a-b/size: where the bytes are in the memory",
          example: "bytes 0-3/8",
        }),
      }),
      content: octetStream("The bytes of the memory in the requested range"),
    },
    ...errorResponses(400, 401, 404),
  },
});

const writeMemory = createRoute({
  method: "put",
  path: "/v1/memories/{id}",
  summary: "Write bytes into a memory at an offset",
  request: {
    params: MemoryIdParams,
    query: OffsetQuery,
    body: {
      content: octetStream("The bytes to write at the offset (offset + length within the memory)"),
      required: true,
    },
  },
  responses: { 204: { description: "Written" }, ...errorResponses(400, 401, 404) },
});

const deleteMemory = createRoute({
  method: "delete",
  path: "/v1/memories/{id}",
  summary: "Delete a memory",
  request: { params: MemoryIdParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(401, 404) },
});

/** Parses a single `bytes=a-b`, `bytes=a-` or `bytes=-n` range; undefined if absent. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | undefined {
  if (!header) return undefined;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === "" && match[2] === "")) {
    throw invalid(`Range "${header}" is not a single byte range (bytes=a-b)`);
  }
  let start: number, end: number;
  if (match[1] === "") {
    start = Math.max(0, size - Number(match[2]));
    end = size;
  } else {
    start = Number(match[1]);
    end = match[2] === "" ? size : Math.min(size, Number(match[2]) + 1);
  }
  if (start >= size || end <= start) {
    throw invalid(`Range "${header}" is outside the memory of ${size} bytes`);
  }
  return { start, end };
}

async function bodyBytes(request: Request): Promise<Uint8Array> {
  return new Uint8Array(await request.arrayBuffer());
}

/** Memory routes. */
export function memoryRoutes(driver: Driver) {
  return newRouter()
    .openapi(createMemory, async (c) => {
      const type = c.req.header("content-type") ?? "";
      let content: Uint8Array | { size: number };
      if (type.startsWith("application/json")) {
        const parsed = MemorySizeRequest.safeParse(await c.req.json());
        if (!parsed.success) throw schemaError(parsed.error, "json");
        content = parsed.data;
      } else if (type.startsWith("application/octet-stream")) {
        content = await bodyBytes(c.req.raw);
      } else {
        throw invalid('send the bytes as application/octet-stream, or JSON {"size": N}');
      }
      const info = await driver.createMemory(c.get("client"), content);
      c.header("Location", `/v1/memories/${info.id}`);
      return c.json(info, 201);
    })
    .openapi(readMemory, async (c) => {
      const owner = c.get("client");
      const { id } = c.req.valid("param");
      const { size } = await driver.readMemory(owner, id, { start: 0, end: 0 });
      const range = parseRange(c.req.header("range"), size);
      const { bytes } = await driver.readMemory(owner, id, range);
      const headers: Record<string, string> = {
        "content-type": "application/octet-stream",
        "accept-ranges": "bytes",
      };
      if (!range) return c.body(bytes as Uint8Array<ArrayBuffer>, 200, headers);
      headers["content-range"] = `bytes ${range.start}-${range.end - 1}/${size}`;
      return c.body(bytes as Uint8Array<ArrayBuffer>, 206, headers);
    })
    .openapi(writeMemory, async (c) => {
      const { id } = c.req.valid("param");
      const { offset } = c.req.valid("query");
      await driver.writeMemory(c.get("client"), id, offset, await bodyBytes(c.req.raw));
      return c.body(null, 204);
    })
    .openapi(deleteMemory, async (c) => {
      await driver.deleteMemory(c.get("client"), c.req.valid("param").id);
      return c.body(null, 204);
    });
}
