/**
 * Triton's model repository and statistics extensions. The index lists the client's named
 * models (every version, READY when compiled) and the repository's entries that failed to
 * load; `load` re-reads an entry of `NNSERVE_MODEL_REPOSITORY` from its files (or compiles a
 * named model of the client that has no compilation), `unload` drops the compilations.
 * Statistics come from the series `/metrics` shows, per model version.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Service } from "../../serving/service.ts";
import { isDirectory, loadModelRepository } from "../../serving/model_repository.ts";
import type { ServedVersion } from "../../serving/served_models.ts";
import { invalid } from "../../nnapi/errors.ts";
import type { Readiness } from "../health.ts";
import { schemaError } from "../errors.ts";
import { newRouter } from "../router.ts";
import { v2Errors, v2Json } from "./schemas.ts";

const NameParams = z.object({
  name: z.string().min(1).openapi({ param: { name: "name", in: "path" }, example: "adder" }),
});

/** The body of an index request: only ready models when `ready` is true. */
export const RepositoryIndexRequest = z.object({ ready: z.boolean().optional() });

const IndexEntry = z.object({
  name: z.string(),
  version: z.string().optional(),
  state: z.enum(["READY", "UNAVAILABLE"]),
  reason: z.string().optional(),
});

const index = createRoute({
  method: "post",
  path: "/v2/repository/index",
  summary: "The client's models and versions, READY or UNAVAILABLE (with the reason)",
  request: {
    body: {
      required: false,
      content: {
        // By reference, so that bodies without a Content-Type pass (as tritonclient sends).
        "application/json": {
          schema: { $ref: "#/components/schemas/V2RepositoryIndexRequest" },
          example: { ready: false },
        },
      },
    },
  },
  responses: {
    200: v2Json(z.array(IndexEntry).openapi("V2RepositoryIndex"), "The index", [
      { name: "adder", version: "1", state: "READY" },
      { name: "broken", version: "1", state: "UNAVAILABLE", reason: "model.json: operands" },
    ]),
    ...v2Errors(400, 401),
  },
});

const load = createRoute({
  method: "post",
  path: "/v2/repository/models/{name}/load",
  summary: "Load a model: re-read a repository entry from its files, compile what is not",
  request: { params: NameParams },
  responses: { 200: v2Json(z.object({}), "Loaded", {}), ...v2Errors(400, 401, 404) },
});

const unload = createRoute({
  method: "post",
  path: "/v2/repository/models/{name}/unload",
  summary: "Unload a model: its compilations go, its versions stay (not ready)",
  request: { params: NameParams },
  responses: { 200: v2Json(z.object({}), "Unloaded", {}), ...v2Errors(401, 404) },
});

const Duration = z.object({ count: z.number(), ns: z.number() });
const ModelStats = z.object({
  model_stats: z.array(z.object({
    name: z.string(),
    version: z.string(),
    last_inference: z.number().openapi({ description: "ms since the epoch; 0 when never" }),
    inference_count: z.number(),
    execution_count: z.number(),
    inference_stats: z.object({
      success: Duration,
      fail: Duration,
      queue: Duration,
      compute_input: Duration,
      compute_infer: Duration,
      compute_output: Duration,
    }),
    batch_stats: z.array(z.object({})).openapi({ description: "Always empty: no batching" }),
  })),
}).openapi("V2ModelStatistics");

const zero = { count: 0, ns: 0 };
const STATS_EXAMPLE = {
  model_stats: [{
    name: "adder",
    version: "1",
    last_inference: 1764115200000,
    inference_count: 3,
    execution_count: 3,
    inference_stats: {
      success: { count: 3, ns: 2400000 },
      fail: zero,
      queue: { count: 3, ns: 30000 },
      compute_input: { count: 3, ns: 90000 },
      compute_infer: { count: 3, ns: 1500000 },
      compute_output: { count: 3, ns: 60000 },
    },
    batch_stats: [],
  }],
};

const statsResponses = {
  200: v2Json(ModelStats, "Statistics", STATS_EXAMPLE),
  ...v2Errors(401, 404),
};
const STATS_SUMMARY = "Inference statistics (the statistics extension), per model version";

const statsAll = createRoute({
  method: "get",
  path: "/v2/models/stats",
  summary: `${STATS_SUMMARY}: every model`,
  responses: statsResponses,
});
const statsOfModel = createRoute({
  method: "get",
  path: "/v2/models/{name}/stats",
  summary: `${STATS_SUMMARY}: one model`,
  request: { params: NameParams },
  responses: statsResponses,
});
const statsOfVersion = createRoute({
  method: "get",
  path: "/v2/models/{name}/versions/{version}/stats",
  summary: `${STATS_SUMMARY}: one version`,
  request: {
    params: NameParams.extend({
      version: z.string().min(1).openapi({ param: { name: "version", in: "path" }, example: "1" }),
    }),
  },
  responses: statsResponses,
});

/** What the repository extension's calls need besides the service. */
export interface RepositoryOptions {
  readiness: () => Readiness;
  modelRepository?: string;
  maxFileBytes: number;
}

/**
 * The repository index of a client (over HTTP and gRPC): its served versions, and the
 * repository's entries that failed to load; only the ready ones when `ready`.
 */
export async function repositoryIndexOf(
  service: Service,
  client: string,
  options: RepositoryOptions,
  ready = false,
): Promise<z.infer<typeof IndexEntry>[]> {
  const entries: z.infer<typeof IndexEntry>[] = (await service.served.index(client)).map((v) => ({
    name: v.name,
    version: v.version,
    state: v.compilation ? "READY" : "UNAVAILABLE",
  }));
  for (const failed of options.readiness().repository ?? []) {
    if (failed.state !== "failed") continue;
    entries.push({
      name: failed.name,
      ...(failed.version ? { version: failed.version } : {}),
      state: "UNAVAILABLE",
      reason: failed.error,
    });
  }
  return ready ? entries.filter((e) => e.state === "READY") : entries;
}

/**
 * Loads a model (over HTTP and gRPC): its repository entry read again when the repository
 * has it, then every version of it without a compilation compiled for the client.
 */
export async function loadModel(
  service: Service,
  options: RepositoryOptions,
  client: string,
  name: string,
): Promise<void> {
  const dir = options.modelRepository;
  if (dir !== undefined && await isDirectory(`${dir}/${name}`)) {
    const [failed] = (await loadModelRepository(service, dir, {
      clients: [client],
      log: (line) => console.log(line),
      name,
      maxFileBytes: options.maxFileBytes,
    })).filter((e) => e.state === "failed");
    if (failed) throw invalid(`failed to load '${name}': ${failed.error}`);
  }
  await service.served.load(client, name);
}

/** A served version's statistics, as the extension writes them (over HTTP and gRPC). */
export function modelStatisticsOf(service: Service, client: string, served: ServedVersion) {
  const s = service.driver.modelStatistics(client, served);
  return {
    name: served.name,
    version: served.version,
    last_inference: s.lastInferenceMs,
    inference_count: s.success.count,
    execution_count: s.success.count,
    inference_stats: {
      success: s.success,
      fail: s.fail,
      queue: s.queue,
      compute_input: s.computeInput,
      compute_infer: s.computeInfer,
      compute_output: s.computeOutput,
    },
    batch_stats: [] as Record<string, never>[],
  };
}

/** The optional JSON body of a repository request (absent, empty or an object). */
async function optionalJson(c: Context): Promise<Record<string, unknown>> {
  const text = await c.req.text();
  if (text.trim() === "") return {};
  try {
    const body = JSON.parse(text);
    if (typeof body === "object" && body !== null && !Array.isArray(body)) return body;
  } catch {
    // reported below
  }
  throw invalid("the body must be a JSON object");
}

/** The repository and statistics extensions' routes. */
export function v2RepositoryRoutes(service: Service, options: RepositoryOptions) {
  const router = newRouter();
  router.openAPIRegistry.register("V2RepositoryIndexRequest", RepositoryIndexRequest);
  // Registered before `/v2/models/{name}` routes could take "stats" for a name.
  router.openapi(statsAll, async (c) => {
    const client = c.get("client");
    const versions = await service.served.index(client);
    return c.json({ model_stats: versions.map((v) => modelStatisticsOf(service, client, v)) }, 200);
  });
  router.openapi(statsOfModel, async (c) => {
    const client = c.get("client");
    const versions = await service.served.versions(client, c.req.valid("param").name);
    return c.json({ model_stats: versions.map((v) => modelStatisticsOf(service, client, v)) }, 200);
  });
  router.openapi(statsOfVersion, async (c) => {
    const { name, version } = c.req.valid("param");
    const client = c.get("client");
    const served = await service.served.resolve(client, name, version);
    return c.json({ model_stats: [modelStatisticsOf(service, client, served)] }, 200);
  });
  router.openapi(index, async (c) => {
    const parsed = RepositoryIndexRequest.safeParse(await optionalJson(c));
    if (!parsed.success) throw schemaError(parsed.error, "body");
    const client = c.get("client");
    return c.json(await repositoryIndexOf(service, client, options, parsed.data.ready), 200);
  });
  router.openapi(load, async (c) => {
    await optionalJson(c);
    await loadModel(service, options, c.get("client"), c.req.valid("param").name);
    return c.json({}, 200);
  });
  router.openapi(unload, async (c) => {
    await optionalJson(c);
    await service.served.unload(c.get("client"), c.req.valid("param").name);
    return c.json({}, 200);
  });
  return router;
}
