/** Model routes: register, describe, delete, supported operations. */
import { createRoute, z } from "@hono/zod-openapi";
import { invalid } from "../nnapi/errors.ts";
import type { Service } from "../serving/service.ts";
import { type ModelJson, ModelSchema } from "../driver/model/model_schema.ts";
import { clientLeft } from "../connection_guard/mod.ts";
import { newRouter } from "./router.ts";
import {
  ADD_MODEL,
  MODEL_INFO,
  MODEL_LIST,
  SUPPORTED_OPERATIONS,
  SUPPORTED_OPERATIONS_REQUEST,
} from "./examples.ts";
import {
  errorResponses,
  JSON_MEDIA_TYPE,
  jsonBody,
  jsonResponse,
  LOCATION_HEADER,
  ModelIdParams,
  ModelInfoBody,
  ModelListBody,
  ModelListQuery,
  ModelName,
  ModelVersion,
  SupportedOperationsBody,
  SupportedOperationsRequest,
} from "./schemas.ts";

const ImportQuery = z.object({
  name: ModelName.optional().openapi({
    description: "A name for the model (JSON models and ONNX imports): list models by it",
    param: { example: MODEL_INFO.name },
  }),
  version: ModelVersion.optional().openapi({
    description: 'Its version under `name` (default "1")',
    param: { example: MODEL_INFO.version },
  }),
  // Repeatable: a repeated query parameter arrives as a list.
  shape: z.union([z.string(), z.array(z.string())]).optional().openapi({
    description: "ONNX imports: `input:1x3x224x224` fixes an input's shape at conversion " +
      "(symbolic extents specialized; `?` keeps an extent as the file has it, as in " +
      "`x:1x3x48x?`); repeat for several inputs. Without it, symbolic extents stay unknown " +
      "and are given at execution with `dimensions`",
  }),
  value: z.union([z.string(), z.array(z.string())]).optional().openapi({
    description: "ONNX imports: `input:16000` (or `input:1,2,3`) fixes an input's values at " +
      "conversion: it becomes a constant and is no longer an input, so what depends only on " +
      "it folds (an If on a sample rate keeps only the branch taken); repeat for several inputs",
  }),
});

const registerModel = createRoute({
  method: "post",
  path: "/v1/models",
  summary: "Register (validate and store) an NNAPI model, or import an ONNX file",
  request: {
    query: ImportQuery,
    body: {
      // Not `required`: the JSON schema then applies to JSON bodies only, and ONNX files
      // pass through to the converter.
      required: false,
      content: {
        "application/json": { schema: ModelSchema, example: ADD_MODEL },
        "application/onnx": {
          schema: z.string().openapi({
            format: "binary",
            description: "The bytes of an ONNX model file (a serialized onnx.ModelProto; " +
              "opsets 7-21, weights inside the file), converted to an NNAPI model; the " +
              "answer names its inputs and outputs",
          }),
        },
      },
    },
  },
  responses: {
    201: {
      ...jsonResponse(ModelInfoBody, "The registered model", { example: MODEL_INFO }),
      headers: LOCATION_HEADER,
    },
    // 413: past a model limit; 429: every ONNX conversion slot taken (Retry-After); 504: an
    // ONNX conversion past its time limit.
    ...errorResponses(400, 401, 413, 429, 504),
  },
});

const listModels = createRoute({
  method: "get",
  path: "/v1/models",
  summary: "This client's models, a page at a time, by name and version when given",
  request: { query: ModelListQuery },
  responses: {
    200: jsonResponse(ModelListBody, "A page of models (in no particular order, stable)", {
      example: MODEL_LIST,
    }),
    ...errorResponses(400, 401),
  },
});

const getModel = createRoute({
  method: "get",
  path: "/v1/models/{id}",
  summary: "A registered model's metadata, or with ?view=model the model itself",
  request: {
    params: ModelIdParams,
    query: z.object({
      view: z.enum(["info", "model"]).optional().openapi({
        description: "`model`: the NNAPI model as JSON that registers again as it is (weights " +
          "inline as base64), e.g. what an ONNX import converted",
      }),
    }),
  },
  responses: {
    200: jsonResponse(z.union([ModelInfoBody, ModelSchema]), "The model's info, or the model", {
      examples: {
        info: { summary: "The model's info (the default view)", value: MODEL_INFO },
        model: { summary: "The model itself (?view=model)", value: ADD_MODEL },
      },
    }),
    ...errorResponses(401, 404),
  },
});

const deleteModel = createRoute({
  method: "delete",
  path: "/v1/models/{id}",
  summary: "Delete a model (compilations of it keep working)",
  request: { params: ModelIdParams },
  responses: { 204: { description: "Deleted" }, ...errorResponses(401, 404) },
});

const supportedOperations = createRoute({
  method: "post",
  path: "/v1/models/{id}/supported-operations",
  summary: "Which operations each device supports (NNAPI getSupportedOperations)",
  request: {
    params: ModelIdParams,
    ...jsonBody(SupportedOperationsRequest, { example: SUPPORTED_OPERATIONS_REQUEST }),
  },
  responses: {
    200: jsonResponse(SupportedOperationsBody, "Support per device, in model order", {
      example: SUPPORTED_OPERATIONS,
    }),
    ...errorResponses(400, 401, 404),
  },
});

/** The media type of ONNX files. */
const ONNX_TYPE = /^application\/onnx\s*(?:;|$)/i;

/**
 * `input:1x3x224x224` query values as shapes by input name; `?` for an extent keeps it as the
 * file has it (`x:1x3x48x?` fixes the batch and leaves the width to execution): 0 here.
 */
function parseShapes(values: string[]): Record<string, number[]> {
  const shapes: Record<string, number[]> = {};
  values.forEach((value, k) => {
    const at = value.lastIndexOf(":");
    const parts = value.slice(at + 1).split("x");
    const dims = parts.map((d) => d === "?" ? 0 : Number(d));
    const valid = parts.every((d, i) => d === "?" || (Number.isInteger(dims[i]) && dims[i] > 0));
    if (at <= 0 || !valid || dims.every((d) => d === 0)) {
      throw invalid(
        `shape '${value}' is not input:DxDx...D with positive extents (? keeps one as it is)`,
        { path: ["query", "shape", k] },
      );
    }
    shapes[value.slice(0, at)] = dims;
  });
  return shapes;
}

/** `input:16000` or `input:1,2,3` query values as fixed input values by input name. */
function parseValues(values: string[]): Record<string, number[]> {
  const fixed: Record<string, number[]> = {};
  values.forEach((value, k) => {
    const at = value.lastIndexOf(":");
    const numbers = value.slice(at + 1).split(",").map((v) => v.trim() === "" ? NaN : Number(v));
    if (at <= 0 || numbers.some((v) => !Number.isFinite(v))) {
      throw invalid(`value '${value}' is not input:V or input:V,V,... with numbers`, {
        path: ["query", "value", k],
      });
    }
    fixed[value.slice(0, at)] = numbers;
  });
  return fixed;
}

/** Model routes. */
export function modelRoutes(service: Service) {
  const { driver } = service;
  return newRouter()
    .openapi(registerModel, async (c) => {
      const owner = c.get("client");
      const { name, version } = c.req.valid("query");
      if (version !== undefined && name === undefined) {
        throw invalid("a version needs a name", { path: ["query", "version"] });
      }
      let info;
      if (ONNX_TYPE.test(c.req.header("content-type") ?? "")) {
        const bytes = new Uint8Array(await c.req.arrayBuffer());
        const shapes = parseShapes(c.req.queries("shape") ?? []);
        const values = parseValues(c.req.queries("value") ?? []);
        // The conversion stops if the client leaves (the request's signal, or the connection
        // guard's, which sees it for bodies of any size) and is refused at once when every
        // conversion slot is taken.
        info = await service.importOnnx(owner, bytes, { name, version, shapes, values }, {
          signal: clientLeft(c.req.raw, c.env),
          whenBusy: "refuse",
        });
      } else if (JSON_MEDIA_TYPE.test(c.req.header("content-type") ?? "")) {
        info = await driver.registerModel(owner, c.req.valid("json") as ModelJson, {
          name,
          version,
        });
      } else {
        throw invalid(
          "send an NNAPI model as application/json or an ONNX file as application/onnx",
        );
      }
      c.header("Location", `/v1/models/${info.id}`);
      return c.json(info, 201);
    })
    .openapi(listModels, async (c) => {
      const { limit = 100, ...query } = c.req.valid("query");
      return c.json(await driver.listModels(c.get("client"), { ...query, limit }), 200);
    })
    .openapi(getModel, async (c) => {
      const id = c.req.valid("param").id;
      if (c.req.valid("query").view === "model") {
        return c.json(await driver.modelJson(c.get("client"), id), 200);
      }
      return c.json(await driver.getModel(c.get("client"), id), 200);
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
