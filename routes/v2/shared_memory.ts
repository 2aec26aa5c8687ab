/**
 * Triton's system shared-memory extension over memory pools: a region's `key` is the id of
 * one of the client's memories (`POST /v1/memories`), so regions need no host shared memory
 * and work across the network. Inference inputs and outputs name a region, a byte size and
 * an offset in it. CUDA shared memory is refused: there is no GPU memory to share.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Driver } from "../../driver/driver.ts";
import { invalid } from "../../nnapi/errors.ts";
import { schemaError } from "../errors.ts";
import { newRouter } from "../router.ts";
import { v2Errors, v2Json } from "./schemas.ts";

const RegionParams = z.object({
  region: z.string().min(1).openapi({ param: { name: "region", in: "path" }, example: "frames" }),
});

/** The body of a region registration (`key` is a memory id). */
export const RegisterRegionBody = z.object({
  key: z.string().min(1).openapi({ description: "The id of a memory of this client" }),
  offset: z.number().int().nonnegative().default(0),
  byte_size: z.number().int().positive(),
}).openapi("V2RegisterRegion");

const RegionStatus = z.array(z.object({
  name: z.string(),
  key: z.string(),
  offset: z.number(),
  byte_size: z.number(),
})).openapi("V2RegionStatus");

const STATUS_EXAMPLE = [{
  name: "frames",
  key: "4b0f3f5e-8c0e-4d59-9a43-2f1f5d1f6a10",
  offset: 0,
  byte_size: 602112,
}];

const register = createRoute({
  method: "post",
  path: "/v2/systemsharedmemory/region/{region}/register",
  summary: "Register a region: a span of one of the client's memories",
  request: {
    params: RegionParams,
    body: {
      required: true,
      content: {
        // By reference, so that bodies without a Content-Type pass (as tritonclient sends).
        "application/json": {
          schema: { $ref: "#/components/schemas/V2RegisterRegion" },
          example: { key: STATUS_EXAMPLE[0].key, offset: 0, byte_size: 602112 },
        },
      },
    },
  },
  responses: { 200: v2Json(z.object({}), "Registered", {}), ...v2Errors(400, 401, 404) },
});

const statusAll = createRoute({
  method: "get",
  path: "/v2/systemsharedmemory/status",
  summary: "Every registered region",
  responses: { 200: v2Json(RegionStatus, "Regions", STATUS_EXAMPLE), ...v2Errors(401) },
});

const statusOne = createRoute({
  method: "get",
  path: "/v2/systemsharedmemory/region/{region}/status",
  summary: "One registered region",
  request: { params: RegionParams },
  responses: { 200: v2Json(RegionStatus, "The region", STATUS_EXAMPLE), ...v2Errors(401, 404) },
});

const unregisterAll = createRoute({
  method: "post",
  path: "/v2/systemsharedmemory/unregister",
  summary: "Unregister every region (the memories stay)",
  responses: { 200: v2Json(z.object({}), "Unregistered", {}), ...v2Errors(401) },
});

const unregisterOne = createRoute({
  method: "post",
  path: "/v2/systemsharedmemory/region/{region}/unregister",
  summary: "Unregister one region (its memory stays)",
  request: { params: RegionParams },
  responses: { 200: v2Json(z.object({}), "Unregistered", {}), ...v2Errors(401, 404) },
});

const cudaStatus = createRoute({
  method: "get",
  path: "/v2/cudasharedmemory/status",
  summary: "CUDA shared memory: none (no GPU memory to share)",
  responses: { 200: v2Json(RegionStatus, "No regions", []), ...v2Errors(401) },
});

const cudaRegister = createRoute({
  method: "post",
  path: "/v2/cudasharedmemory/region/{region}/register",
  summary: "CUDA shared memory: refused (no GPU memory to share)",
  request: { params: RegionParams },
  responses: { 400: v2Json(z.object({ error: z.string() }), "Refused", { error: "refused" }) },
});

/** The shared-memory extension's routes. */
export function v2SharedMemoryRoutes(driver: Driver) {
  const router = newRouter();
  router.openAPIRegistry.register("V2RegisterRegion", RegisterRegionBody);
  const status = (regions: { name: string; memory: string; offset: number; byteSize: number }[]) =>
    regions.map((r) => ({ name: r.name, key: r.memory, offset: r.offset, byte_size: r.byteSize }));
  router.openapi(register, async (c) => {
    const { region } = c.req.valid("param");
    const json = await c.req.json().catch(() => {
      throw invalid("the body is not JSON: {key, offset, byte_size}");
    });
    const parsed = RegisterRegionBody.safeParse(json);
    if (!parsed.success) throw schemaError(parsed.error, "body");
    const body = parsed.data;
    await driver.regions.register(c.get("client"), {
      name: region,
      memory: body.key,
      offset: body.offset,
      byteSize: body.byte_size,
    });
    return c.json({}, 200);
  });
  router.openapi(
    statusAll,
    async (c) => c.json(status(await driver.regions.list(c.get("client"))), 200),
  );
  router.openapi(statusOne, async (c) => {
    const region = await driver.regions.get(c.get("client"), c.req.valid("param").region);
    return c.json(status([region]), 200);
  });
  router.openapi(unregisterAll, async (c) => {
    await driver.regions.unregister(c.get("client"));
    return c.json({}, 200);
  });
  router.openapi(unregisterOne, async (c) => {
    await driver.regions.unregister(c.get("client"), c.req.valid("param").region);
    return c.json({}, 200);
  });
  router.openapi(cudaStatus, (c) => c.json([], 200));
  router.openapi(cudaRegister, () => {
    throw invalid("CUDA shared memory is not supported: use system shared memory over memories");
  });
  return router;
}
