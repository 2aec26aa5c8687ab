/**
 * Request and response schemas of the HTTP API (docs/api.md), shared by validation and the
 * generated OpenAPI document.
 */
import { z } from "@hono/zod-openapi";
import { JsonNumbersSchema } from "../driver/model/model_schema.ts";
import { BatchingSchema } from "../driver/execution/dynamic_batcher.ts";
import { ERROR_STATUSES, LIMITS } from "../nnapi/errors.ts";
import { type BodyExample, EXAMPLE_IDS } from "./examples.ts";

const dimensions = z.array(z.number().int().nonnegative());
const id = z.string().min(1).max(200);

/** The `{id}` path parameter of a kind of resource, with an example id of that kind. */
function idParams(kind: keyof typeof EXAMPLE_IDS) {
  const param = { name: "id", in: "path" as const, example: EXAMPLE_IDS[kind] };
  return z.object({ id: id.openapi({ param, description: `The ${kind}'s id` }) });
}

export const ModelIdParams = idParams("model");
export const CompilationIdParams = idParams("compilation");
export const MemoryIdParams = idParams("memory");

export const ErrorBody = z.object({
  status: z.enum(ERROR_STATUSES),
  message: z.string(),
  path: z.array(z.union([z.string(), z.number()])).optional(),
  outputShapes: z.array(z.object({ dimensions, isSufficient: z.boolean() })).optional(),
  retryAfterSeconds: z.number().int().optional().openapi({
    description: "Transient refusals: when to try again (also the Retry-After header)",
  }),
  limit: z.enum(LIMITS).optional().openapi({
    description: "Refusals: the limit of the service that refused the request",
  }),
}).openapi("Error");

export const DevicesBody = z.object({
  devices: z.array(
    z.object({
      name: z.string(),
      type: z.string(),
      version: z.string(),
      featureLevel: z.number(),
    }).passthrough(),
  ),
  replica: z.string().optional().openapi({ description: "The replica that answered" }),
}).openapi("Devices");

const ModelPort = z.object({
  operand: z.number(),
  type: z.string(),
  dimensions,
  scale: z.number().optional().openapi({ description: "Quantized types: the scale" }),
  zeroPoint: z.number().optional().openapi({ description: "Quantized types: the zero point" }),
  name: z.string().optional().openapi({ description: "The ONNX name (imported models)" }),
});

const OnnxPort = z.object({
  name: z.string(),
  elementType: z.string(),
  shape: z.array(z.union([z.number(), z.string()])).openapi({
    description: "ONNX extents; strings are symbolic (given at execution)",
  }),
});

export const ModelInfoBody = z.object({
  id: z.string(),
  checksum: z.string(),
  createdAt: z.string(),
  byteSize: z.number(),
  halVersion: z.string(),
  operandCount: z.number(),
  operationCount: z.number(),
  inputs: z.array(ModelPort),
  outputs: z.array(ModelPort),
  name: z.string().optional(),
  version: z.string().optional().openapi({
    description: 'Its version under `name` ("1" when the name came without one)',
  }),
  onnx: z.object({
    opset: z.number(),
    layout: z.string().openapi({
      description: "The image layout its operations run in: NHWC where moving NCHW image " +
        "operations there removes transposes, else NCHW (inputs and outputs keep their ONNX shapes)",
    }),
    notes: z.array(z.string()).openapi({
      description: "What the conversion did that the client should know (int64 narrowed " +
        "to int32, BatchNormalization folded, ...)",
    }),
    inputs: z.array(OnnxPort),
    outputs: z.array(OnnxPort),
  }).optional().openapi({ description: "How an imported ONNX file became this model" }),
}).openapi("ModelInfo");

/** A listing page's `next`: the cursor of the following page. */
const NextCursor = z.string().optional().openapi({
  description: "The cursor of the next page; absent on the last page",
});

/** How many items a listing page holds, and where it starts. */
const Paging = {
  limit: z.coerce.number().int().min(1).max(1000).optional().openapi({
    description: "Items per page (1-1000, default 100)",
  }),
  cursor: z.string().min(1).max(1000).optional().openapi({
    description: "Where the page starts: the `next` of the previous page",
  }),
};

/** A model's name: a path segment of the Open Inference Protocol's URLs. */
export const ModelName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, {
  message: "a name is 1-200 letters, digits, '.', '_' or '-', starting with a letter or digit",
});

/** A model's version under its name: a positive integer, as the model repository's folders. */
export const ModelVersion = z.string().regex(/^[1-9][0-9]{0,8}$/, {
  message: "a version is a positive integer",
});

export const ModelListQuery = z.object({
  name: ModelName.optional().openapi({ description: "Only models of this name" }),
  version: ModelVersion.optional().openapi({ description: "Only this version (with `name`)" }),
  ...Paging,
});

export const ModelListBody = z.object({
  models: z.array(ModelInfoBody),
  next: NextCursor,
}).openapi("ModelList");

export const SupportedOperationsRequest = z.object({
  devices: z.array(z.string()).optional(),
}).strict();

export const SupportedOperationsBody = z.object({
  devices: z.array(z.object({ name: z.string(), supported: z.array(z.boolean()) })),
}).openapi("SupportedOperations");

const base64Of32Bytes = z.string().refine((s) => {
  try {
    return Uint8Array.fromBase64(s).byteLength === 32;
  } catch {
    return false;
  }
}, "must be the base64 of exactly 32 bytes");

/** Dynamic batching of a compilation (Triton's dynamic batcher). */
export const Batching = z.object(BatchingSchema.shape).strict().openapi("Batching");

export const CompilationRequest = z.object({
  model: id,
  preference: z.enum(["LOW_POWER", "FAST_SINGLE_ANSWER", "SUSTAINED_SPEED"]).optional(),
  priority: z.enum(["LOW", "MEDIUM", "HIGH"]).optional(),
  devices: z.array(z.string()).min(1).optional(),
  deadlineMs: z.number().positive().optional(),
  cache: z.object({ token: base64Of32Bytes }).strict().optional(),
  partitioning: z.enum(["static", "profile"]).optional().openapi({
    description: "static (default): costs estimated from each device's measured speed; " +
      "profile: the model is timed on each device at preparation (slower to prepare; the " +
      "profiled plan is cached with the compilation)",
  }),
  batching: Batching.optional().openapi({
    description: "stack concurrent executions into one run along the inputs' first extent " +
      "(the batch), which every input and output must leave open",
  }),
}).strict().openapi("CompilationRequest");

/** The plan of a compilation: which device runs which operations, and the estimated cost. */
export const PlanBody = z.object({
  objective: z.literal("latency").openapi({
    description: "what the plan minimises: one execution's latency, for every preference",
  }),
  costs: z.enum(["static", "profile"]),
  estimatedCost: z.number().openapi({ description: "µs, by the devices' measured speeds" }),
  switches: z.number().int(),
  optimal: z.boolean(),
  steps: z.array(z.object({
    device: z.string(),
    operations: z.array(z.number().int()),
    inputs: z.array(z.number().int()),
    outputs: z.array(z.number().int()),
    transfers: z.array(z.object({
      operand: z.number().int(),
      from: z.string(),
      to: z.string(),
      bytes: z.number().int(),
    })),
    estimatedCost: z.number(),
    binds: z.enum(["at preparation", "per shape"]).openapi({
      description: "when its kernels are bound to shapes: at preparation (every shape known " +
        "then), or per shape (some extent is given at execution: each executor binds them " +
        "at the first execution that brings a new set of input shapes)",
    }),
    fallback: z.string().optional(),
  })),
}).openapi("Plan");

export const CompilationBody = z.object({
  id: z.string(),
  model: z.string(),
  preference: z.string(),
  priority: z.string(),
  devices: z.array(z.string()),
  cache: z.enum(["hit", "miss", "none"]),
  cacheRejected: z.string().optional().openapi({
    description: "Why a cached entry was unusable (tampered, truncated, ...) and was replaced",
  }),
  prepareMs: z.number(),
  plan: PlanBody.optional(),
  batching: Batching.optional(),
}).openapi("Compilation");

export const CompilationDescriptionBody = z.object({
  id: z.string(),
  model: z.string(),
  preference: z.string(),
  priority: z.string(),
  devices: z.array(z.string()),
  createdAt: z.string(),
  plan: PlanBody.optional(),
  batching: Batching.optional(),
}).openapi("CompilationDescription");

export const CompilationListQuery = z.object({
  model: id.optional().openapi({ description: "Only compilations of this model" }),
  ...Paging,
});

export const CompilationListBody = z.object({
  compilations: z.array(CompilationDescriptionBody),
  next: NextCursor,
}).openapi("CompilationList");

/** The keys of an argument that give it a value; at most one may appear. */
const VALUE_KEYS = ["data", "base64", "memory", "buffer", "omitted", "parameters"] as const;

/**
 * One execution argument (docs/api.md "ARG"). One object with exclusive keys rather than a union
 * of shapes, so that a fault is reported at the field that has it (`inputs.0.data.3`)
 * instead of as a mismatch with whichever alternative came last.
 */
export const Argument = z.object({
  data: JsonNumbersSchema.optional(),
  base64: z.string().optional(),
  memory: id.optional(),
  offset: z.number().int().nonnegative().optional(),
  length: z.number().int().nonnegative().optional(),
  buffer: id.optional(),
  omitted: z.literal(true).optional(),
  parameters: z.object({
    binary_data_size: z.number().int().nonnegative(),
  }).strict().optional().openapi({
    description: "In a framed binary body (Inference-Header-Content-Length): the input's " +
      "bytes are the next binary_data_size bytes after the JSON header",
  }),
  dimensions: dimensions.optional(),
}).strict().superRefine((arg, context) => {
  const given = VALUE_KEYS.filter((key) => arg[key] !== undefined);
  if (given.length > 1) {
    context.addIssue({
      code: "custom",
      message: `give one of ${VALUE_KEYS.join(", ")}; not ${given.join(" and ")} together`,
      path: [given[1]],
    });
  }
  const region = (["offset", "length"] as const).filter((key) => arg[key] !== undefined);
  if (arg.memory !== undefined && region.length < 2) {
    const missing = arg.offset === undefined ? "offset" : "length";
    context.addIssue({
      code: "custom",
      message: "a memory region needs offset and length",
      path: [missing],
    });
  }
  if (arg.memory === undefined && region.length > 0) {
    context.addIssue({
      code: "custom",
      message: `${region[0]} belongs to a memory region ({memory, offset, length})`,
      path: [region[0]],
    });
  }
  if (arg.omitted && arg.dimensions !== undefined) {
    context.addIssue({
      code: "custom",
      message: "an omitted input has no dimensions",
      path: ["dimensions"],
    });
  }
}).openapi("Argument", {
  description: 'Exactly one of data (JSON numbers; non-finite values as "NaN", ' +
    '"Infinity", "-Infinity"), base64, {memory, offset, length}, buffer, omitted or ' +
    "parameters.binary_data_size (framed binary bodies), " +
    "with optional dimensions; an output with none of them is returned inline.",
});

export const ExecutionRequest = z.object({
  inputs: z.union([z.array(Argument), z.record(z.string(), Argument)]).openapi({
    description: "In the model's input order; or, for a model whose inputs have names (an " +
      "ONNX import), an object keyed by input name",
  }),
  outputs: z.array(Argument).optional(),
  measureTiming: z.boolean().optional(),
  deadlineMs: z.number().positive().optional(),
  loopTimeoutMs: z.number().positive().optional().openapi({
    description: "NNAPI's loop timeout (ANeuralNetworksExecution_setLoopTimeout): how long " +
      "each WHILE loop may run, in ms; default 2000, larger values clamped to 15000. A loop " +
      "past it (or past deadlineMs) fails the execution with 504 MISSED_DEADLINE_TRANSIENT",
  }),
  outputEncoding: z.enum(["json", "base64", "binary"]).optional().openapi({
    description: "How inline outputs come back: JSON numbers (default), base64, or binary: " +
      "a framed application/octet-stream answer (Inference-Header-Content-Length bytes of " +
      "JSON header, each output's bytes after it as its parameters.binary_data_size says)",
  }),
}).strict().openapi("ExecutionRequest");

/** Query options of an execution whose body is the raw bytes of the model's one input. */
export const RawExecutionQuery = z.object({
  dimensions: z.string().optional().openapi({
    description: "application/octet-stream bodies: the input's dimensions, e.g. 1,224,224,3 " +
      "(or the Input-Dimensions header), for an input whose model dimensions are unknown",
  }),
  outputEncoding: z.enum(["json", "base64", "binary"]).optional().openapi({
    description: "application/octet-stream bodies: as the JSON request's outputEncoding",
  }),
  measureTiming: z.enum(["true", "false"]).optional(),
  deadlineMs: z.string().regex(/^\d+(\.\d+)?$/, "must be a positive number of ms")
    .transform(Number).refine((ms) => ms > 0, "must be positive").optional(),
});

export const ExecutionBody = z.object({
  status: z.literal("NONE"),
  outputs: z.array(z.object({
    name: z.string().optional().openapi({ description: "The output's name (imported models)" }),
    dimensions,
    data: JsonNumbersSchema.optional(),
    base64: z.string().optional(),
    parameters: z.object({ binary_data_size: z.number().int() }).optional().openapi({
      description: "In a framed binary answer's header: the output's bytes are the next " +
        "binary_data_size bytes after the header",
    }),
  })),
  outputShapes: z.array(z.object({ dimensions, isSufficient: z.boolean() })),
  timing: z.object({
    onDeviceUs: z.number(),
    inDriverUs: z.number(),
    steps: z.array(z.object({
      device: z.string(),
      operations: z.array(z.number().int()),
      onDeviceUs: z.number(),
      fallback: z.string().optional().openapi({
        description: "Why cpu-reference ran it: the planned device has no kernel for the " +
          "execution's shapes",
      }),
    })).optional().openapi({
      description: "Time of each plan step, on the device that ran it: the reference CPU " +
        "(cpu-reference) where the planned device has no kernel for the execution's shapes",
    }),
  }).optional(),
}).openapi("ExecutionResult");

/** Error responses every route may give, for the OpenAPI document. */
export function errorResponses(...codes: number[]) {
  return Object.fromEntries(codes.map((code) => [code, {
    description: "NNAPI error (docs/api.md Errors)",
    content: { "application/json": { schema: ErrorBody } },
  }]));
}

/** A JSON request body for createRoute, with its example. */
export function jsonBody<T extends z.ZodType>(schema: T, example: BodyExample<T>) {
  return { body: { content: { "application/json": { schema, ...example } }, required: true } };
}

/** JSON media types (application/json, application/*+json), with or without parameters. */
export const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/** A JSON response for createRoute, with its example. */
export function jsonResponse<T extends z.ZodType>(
  schema: T,
  description: string,
  example: BodyExample<T>,
) {
  return { description, content: { "application/json": { schema, ...example } } };
}

/** The `Location` header of a creation answer: the path of what it created. */
export const LOCATION_HEADER = z.object({
  Location: z.string().openapi({ description: "The path of the created resource" }),
});

export const MemorySizeRequest = z.object({
  size: z.number().int().nonnegative(),
}).strict().openapi("MemorySizeRequest");

export const MemoryBody = z.object({
  id: z.string(),
  size: z.number(),
  createdAt: z.string(),
}).openapi("Memory");

/** `?offset=K`: a decimal non-negative integer (no hex, no exponent, not empty). */
export const OffsetQuery = z.object({
  offset: z.string()
    .regex(/^\d+$/, "must be a decimal non-negative integer")
    .transform(Number)
    .refine(Number.isSafeInteger, "is too large")
    .optional()
    .transform((offset) => offset ?? 0),
});

export const BufferRequest = z.object({
  dimensions: dimensions.optional(),
  roles: z.array(
    z.object({
      io: z.enum(["input", "output"]),
      index: z.number().int().nonnegative(),
      frequency: z.number().gt(0).lte(1).optional(),
    }).strict(),
  ).min(1),
}).strict().openapi("BufferRequest");

export const BufferBody = z.object({ token: z.string(), dimensions }).openapi("Buffer");

export const TokenParams = z.object({
  token: id.openapi({ param: { name: "token", in: "path", example: EXAMPLE_IDS.buffer } }),
});

export const CopyRequest = z.object({ memory: id }).strict().openapi("CopyRequest");
