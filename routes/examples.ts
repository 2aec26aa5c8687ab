/**
 * Example values of the OpenAPI document, one story told across the routes: a client
 * registers a two-element ADD model, compiles it, runs it, and keeps tensors in a memory
 * and a driver-managed buffer. Each value is defined once, typed against the schema it
 * documents, and is what the service really answers (ids are the UUIDs it generates).
 */
import type { z } from "@hono/zod-openapi";
import type { ModelSchema } from "../driver/model/model_schema.ts";
import type {
  BufferBody,
  BufferRequest,
  CompilationBody,
  CompilationDescriptionBody,
  CompilationListBody,
  CompilationRequest,
  CopyRequest,
  DevicesBody,
  ExecutionBody,
  ExecutionRequest,
  MemoryBody,
  MemorySizeRequest,
  ModelInfoBody,
  ModelListBody,
  PlanBody,
  SupportedOperationsBody,
  SupportedOperationsRequest,
} from "./schemas.ts";

/** The example of a body: one `example`, or named `examples` (OpenAPI media type fields). */
export type BodyExample<T extends z.ZodType> =
  | { example: z.input<T> }
  | { examples: Record<string, { summary: string; value: z.input<T> }> };

/** The ids of the story's resources. */
export const EXAMPLE_IDS = {
  model: "dad35a53-bbc4-4c0a-af77-edca7b0b12b2",
  compilation: "a60b29af-2530-47b8-9a98-41eba6372238",
  memory: "fe0f6319-7d12-4861-ae51-2b639a905aa2",
  buffer: "a60b29af-2530-47b8-9a98-41eba6372238.13ac6d0f-947a-47c9-ae85-73976b6e6096",
} as const;

const tensor2 = { type: "TENSOR_FLOAT32" as const, dimensions: [2], scale: 0, zeroPoint: 0 };

/**
 * out = a + b over [2] float32 tensors, as `GET /v1/models/{id}?view=model` returns it
 * (constants as base64; `"value": [0]` registers the same model).
 */
export const ADD_MODEL = {
  operands: [
    { ...tensor2, lifetime: "MODEL_INPUT" },
    { ...tensor2, lifetime: "MODEL_INPUT" },
    {
      type: "INT32",
      dimensions: [],
      scale: 0,
      zeroPoint: 0,
      lifetime: "CONSTANT_COPY",
      value: { base64: "AAAAAA==" },
    },
    { ...tensor2, lifetime: "MODEL_OUTPUT" },
  ],
  operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
  inputIndexes: [0, 1],
  outputIndexes: [3],
  relaxComputationFloat32toFloat16: false,
} satisfies z.input<typeof ModelSchema>;

const port = (operand: number) => ({ operand, type: "TENSOR_FLOAT32", dimensions: [2] });

export const MODEL_INFO = {
  id: EXAMPLE_IDS.model,
  checksum: "3a647ce023193332aead76d063d4049eb3e76316eb79bd121654bba6fa6d4c0f",
  createdAt: "2026-11-26T11:17:55.819Z",
  byteSize: 548,
  halVersion: "V1_0",
  operandCount: 4,
  operationCount: 1,
  inputs: [port(0), port(1)],
  outputs: [port(3)],
  name: "add",
  version: "1",
} satisfies z.input<typeof ModelInfoBody>;

/** A page of one model (`?limit=1`) with more to come. */
export const MODEL_LIST = {
  models: [MODEL_INFO],
  next: "ImRhZDM1YTUzLWJiYzQtNGMwYS1hZjc3LWVkY2E3YjBiMTJiMiI=",
} satisfies z.input<typeof ModelListBody>;

export const SUPPORTED_OPERATIONS_REQUEST = {
  devices: ["cpu-simd", "cpu-reference"],
} satisfies z.input<typeof SupportedOperationsRequest>;

export const SUPPORTED_OPERATIONS = {
  devices: [{ name: "cpu-simd", supported: [true] }, { name: "cpu-reference", supported: [true] }],
} satisfies z.input<typeof SupportedOperationsBody>;

export const DEVICES = {
  devices: [{
    name: "cpu-simd",
    type: "CPU",
    version: "0.4.0",
    featureLevel: 30,
    halVersion: "V1_3",
    capabilities: {
      relaxedFloat32toFloat16PerformanceScalar: { execTime: 0.23, powerUsage: 0.23 },
      relaxedFloat32toFloat16PerformanceTensor: { execTime: 0.23, powerUsage: 0.23 },
      operandPerformance: { TENSOR_FLOAT32: { execTime: 0.23, powerUsage: 0.23 } },
    },
    supportedOperations: ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "MUL"],
    numberOfCacheFilesNeeded: { modelCache: 1, dataCache: 1 },
  }],
  replica: "nnserve-0",
} satisfies z.input<typeof DevicesBody>;

export const COMPILATION_REQUEST = {
  model: EXAMPLE_IDS.model,
  preference: "FAST_SINGLE_ANSWER",
  priority: "MEDIUM",
  cache: { token: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" },
} satisfies z.input<typeof CompilationRequest>;

const PLAN = {
  objective: "latency",
  costs: "static",
  estimatedCost: 0.0013,
  switches: 0,
  optimal: true,
  steps: [{
    device: "cpu-simd",
    operations: [0],
    inputs: [0, 1],
    outputs: [3],
    transfers: [],
    estimatedCost: 0.0013,
    binds: "at preparation",
  }],
} satisfies z.input<typeof PlanBody>;

/** What every answer about the compilation says. */
const compiled = {
  id: EXAMPLE_IDS.compilation,
  model: EXAMPLE_IDS.model,
  preference: "FAST_SINGLE_ANSWER",
  priority: "MEDIUM",
  devices: ["cpu-simd", "cpu-reference"],
};

export const COMPILATION = {
  ...compiled,
  cache: "miss",
  prepareMs: 7.44,
  plan: PLAN,
} satisfies z.input<typeof CompilationBody>;

const COMPILATION_SUMMARY = { ...compiled, createdAt: "2026-11-26T11:17:55.900Z" };

export const COMPILATION_DESCRIPTION = {
  ...COMPILATION_SUMMARY,
  plan: PLAN,
} satisfies z.input<typeof CompilationDescriptionBody>;

/** The last (and only) page: no `next`. */
export const COMPILATION_LIST = {
  compilations: [COMPILATION_SUMMARY],
} satisfies z.input<typeof CompilationListBody>;

export const EXECUTION_REQUEST = {
  inputs: [{ data: [1, 2] }, { data: [3, 4] }],
  measureTiming: true,
} satisfies z.input<typeof ExecutionRequest>;

export const EXECUTION_RESULT = {
  status: "NONE",
  outputs: [{ dimensions: [2], data: [4, 6] }],
  outputShapes: [{ dimensions: [2], isSufficient: true }],
  timing: {
    onDeviceUs: 41,
    inDriverUs: 63,
    steps: [{ device: "cpu-simd", operations: [0], onDeviceUs: 41 }],
  },
} satisfies z.input<typeof ExecutionBody>;

/** Room for one [2] float32 tensor. */
export const MEMORY_SIZE_REQUEST = { size: 8 } satisfies z.input<typeof MemorySizeRequest>;

export const MEMORY = {
  id: EXAMPLE_IDS.memory,
  size: 8,
  createdAt: "2026-11-26T11:17:58.252Z",
} satisfies z.input<typeof MemoryBody>;

/** A buffer for the model's output, as the execution's outputs[0]. */
export const BUFFER_REQUEST = {
  roles: [{ io: "output", index: 0 }],
} satisfies z.input<typeof BufferRequest>;

export const BUFFER = {
  token: EXAMPLE_IDS.buffer,
  dimensions: [2],
} satisfies z.input<typeof BufferBody>;

export const COPY_REQUEST = { memory: EXAMPLE_IDS.memory } satisfies z.input<typeof CopyRequest>;
