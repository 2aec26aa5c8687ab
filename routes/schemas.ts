/**
 * Request and response schemas of the HTTP API (API.md), shared by validation and the
 * generated OpenAPI document.
 */
import { z } from "@hono/zod-openapi";
import { ERROR_STATUSES } from "../nnapi/errors.ts";

const dimensions = z.array(z.number().int().nonnegative());
const id = z.string().min(1).max(200);

export const IdParams = z.object({ id: id.openapi({ param: { name: "id", in: "path" } }) });

export const ErrorBody = z.object({
  status: z.enum(ERROR_STATUSES),
  message: z.string(),
  path: z.array(z.union([z.string(), z.number()])).optional(),
  outputShapes: z.array(z.object({ dimensions, isSufficient: z.boolean() })).optional(),
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
}).openapi("Devices");

export const ModelInfoBody = z.object({
  id: z.string(),
  checksum: z.string(),
  createdAt: z.string(),
  byteSize: z.number(),
  halVersion: z.string(),
  operandCount: z.number(),
  operationCount: z.number(),
  inputs: z.array(z.object({ operand: z.number(), type: z.string(), dimensions })),
  outputs: z.array(z.object({ operand: z.number(), type: z.string(), dimensions })),
}).openapi("ModelInfo");

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

export const CompilationRequest = z.object({
  model: id,
  preference: z.enum(["LOW_POWER", "FAST_SINGLE_ANSWER", "SUSTAINED_SPEED"]).optional(),
  priority: z.enum(["LOW", "MEDIUM", "HIGH"]).optional(),
  devices: z.array(z.string()).min(1).optional(),
  deadlineMs: z.number().positive().optional(),
  cache: z.object({ token: base64Of32Bytes }).strict().optional(),
}).strict().openapi("CompilationRequest");

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
}).openapi("Compilation");

const withDimensions = { dimensions: dimensions.optional() };

/** One execution argument (API.md "ARG"). */
export const Argument = z.union([
  z.object({ data: z.array(z.number()), ...withDimensions }).strict(),
  z.object({ base64: z.string(), ...withDimensions }).strict(),
  z.object({
    memory: id,
    offset: z.number().int().nonnegative(),
    length: z.number().int().nonnegative(),
    ...withDimensions,
  }).strict(),
  z.object({ buffer: id, ...withDimensions }).strict(),
  z.object({ omitted: z.literal(true) }).strict(),
  z.object({ ...withDimensions }).strict(),
]).openapi("Argument");

export const ExecutionRequest = z.object({
  inputs: z.array(Argument),
  outputs: z.array(Argument).optional(),
  measureTiming: z.boolean().optional(),
  deadlineMs: z.number().positive().optional(),
  outputEncoding: z.enum(["json", "base64"]).optional(),
}).strict().openapi("ExecutionRequest");

export const ExecutionBody = z.object({
  status: z.literal("NONE"),
  outputs: z.array(z.object({
    dimensions,
    data: z.array(z.number()).optional(),
    base64: z.string().optional(),
  })),
  outputShapes: z.array(z.object({ dimensions, isSufficient: z.boolean() })),
  timing: z.object({ onDeviceUs: z.number(), inDriverUs: z.number() }).optional(),
}).openapi("ExecutionResult");

/** Error responses every route may give, for the OpenAPI document. */
export function errorResponses(...codes: number[]) {
  return Object.fromEntries(codes.map((code) => [code, {
    description: "NNAPI error (API.md Errors)",
    content: { "application/json": { schema: ErrorBody } },
  }]));
}

/** A JSON request body for createRoute. */
export function jsonBody<T extends z.ZodType>(schema: T) {
  return { body: { content: { "application/json": { schema } }, required: true } };
}

/** A JSON response for createRoute. */
export function jsonResponse<T extends z.ZodType>(schema: T, description: string) {
  return { description, content: { "application/json": { schema } } };
}

export const MemorySizeRequest = z.object({
  size: z.number().int().nonnegative(),
}).strict().openapi("MemorySizeRequest");

export const MemoryBody = z.object({
  id: z.string(),
  size: z.number(),
  createdAt: z.string(),
}).openapi("Memory");

export const OffsetQuery = z.object({
  offset: z.coerce.number().int().nonnegative().default(0),
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
  token: id.openapi({ param: { name: "token", in: "path" } }),
});

export const CopyRequest = z.object({ memory: id }).strict().openapi("CopyRequest");
