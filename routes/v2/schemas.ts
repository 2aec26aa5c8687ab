/**
 * Bodies of the Open Inference Protocol (KServe v2 REST) and of Triton's extensions as
 * nnserve answers them, with examples, for the OpenAPI document and the handlers.
 */
import { z } from "@hono/zod-openapi";

/** Every failure under `/v2`: the protocol's `{"error": "..."}`. */
export const V2Error = z.object({ error: z.string() }).openapi("V2Error", {
  example: { error: "no model named 'resnet'" },
});

/** Protocol error responses for createRoute (status per NNAPI status, as under `/v1`). */
export function v2Errors(...codes: number[]) {
  return Object.fromEntries(codes.map((code) => [code, {
    description: "Failure, as the protocol writes it",
    content: { "application/json": { schema: V2Error } },
  }]));
}

/** A JSON response with its example. */
export function v2Json<T extends z.ZodType>(schema: T, description: string, example: z.infer<T>) {
  return { description, content: { "application/json": { schema, example } } };
}

export const ServerMetadata = z.object({
  name: z.string(),
  version: z.string(),
  extensions: z.array(z.string()),
}).openapi("V2ServerMetadata");

export const Live = z.object({ live: z.boolean() }).openapi("V2Live");
export const Ready = z.object({ ready: z.boolean() }).openapi("V2Ready");
export const ModelReady = z.object({ name: z.string(), ready: z.boolean() })
  .openapi("V2ModelReady");

const TensorMetadata = z.object({
  name: z.string(),
  datatype: z.string(),
  shape: z.array(z.number().int()).openapi({ description: "-1 for an extent given per request" }),
});

export const ModelMetadata = z.object({
  name: z.string(),
  versions: z.array(z.string()),
  platform: z.string(),
  inputs: z.array(TensorMetadata),
  outputs: z.array(TensorMetadata),
  parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional()
    .openapi({
      description: "Quantized inputs and outputs: `<tensor>_scale` and `<tensor>_zero_point`",
    }),
}).openapi("V2ModelMetadata");

const ConfigTensor = z.object({
  name: z.string(),
  data_type: z.string(),
  dims: z.array(z.number()),
});

/** Triton's model configuration (the fields clients such as perf_analyzer read). */
export const ModelConfig = z.object({
  name: z.string(),
  platform: z.string(),
  backend: z.string(),
  max_batch_size: z.number().openapi({
    description: "0 without dynamic batching; with it, its maxBatchSize, and the tensors' " +
      "dims leave out the batch extent (as Triton's)",
  }),
  dynamic_batching: z.object({
    preferred_batch_size: z.array(z.number().int()).optional(),
    max_queue_delay_microseconds: z.number().int(),
    default_queue_policy: z.object({ max_queue_size: z.number().int() }),
  }).optional(),
  input: z.array(ConfigTensor),
  output: z.array(ConfigTensor),
}).openapi("V2ModelConfig");

export const InferResponse = z.object({
  model_name: z.string(),
  model_version: z.string(),
  id: z.string().optional(),
  outputs: z.array(z.object({
    name: z.string(),
    datatype: z.string(),
    shape: z.array(z.number().int()),
    parameters: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    data: z.array(z.unknown()).optional(),
  })),
}).openapi("V2InferResponse");

export const SERVER_METADATA_EXAMPLE = {
  name: "nnserve",
  version: "0.0.0",
  extensions: ["binary_tensor_data"],
};

export const MODEL_METADATA_EXAMPLE = {
  name: "adder",
  versions: ["1", "2"],
  platform: "nnapi",
  inputs: [
    { name: "input0", datatype: "FP32", shape: [2] },
    { name: "input1", datatype: "FP32", shape: [2] },
  ],
  outputs: [{ name: "output0", datatype: "FP32", shape: [2] }],
};

export const INFER_REQUEST_EXAMPLE = {
  id: "42",
  inputs: [
    { name: "input0", shape: [2], datatype: "FP32", data: [1, 2] },
    { name: "input1", shape: [2], datatype: "FP32", data: [10, 20] },
  ],
  outputs: [{ name: "output0" }],
};

export const INFER_RESPONSE_EXAMPLE = {
  model_name: "adder",
  model_version: "2",
  id: "42",
  outputs: [{ name: "output0", datatype: "FP32", shape: [2], data: [11, 22] }],
};
