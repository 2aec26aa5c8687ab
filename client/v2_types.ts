/**
 * The Open Inference Protocol's shapes as the SDK's `V2Client` (`v2.ts`) takes and returns
 * them: metadata, inputs and outputs, shared-memory regions, the repository and statistics.
 *
 * @module
 */
import type { TensorData } from "./v2_tensors.ts";

/** A parameter value of the protocol. */
export type V2Parameter = string | number | boolean;

/** Server metadata (`GET /v2`). */
export interface V2ServerMetadata {
  /** The server's name. */
  name: string;
  /** The server's version. */
  version: string;
  /** The protocol extensions it implements (`binary_tensor_data`, `statistics`, ...). */
  extensions: string[];
}

/** An input or output as model metadata describes it. */
export interface V2TensorMetadata {
  /** The tensor's name, which inference requests and responses use. */
  name: string;
  /** The protocol datatype: FP32, FP16, INT32, UINT8, INT8, BOOL, ... */
  datatype: string;
  /** The shape; -1 marks an extent given per request. */
  shape: number[];
}

/** Model metadata (`GET /v2/models/{name}`). */
export interface V2ModelMetadata {
  /** The model's name. */
  name: string;
  /** The versions the server has. */
  versions?: string[];
  /** What runs it (nnserve: `nnapi`, or `onnx` for imported models). */
  platform: string;
  /** Its inputs, in order. */
  inputs: V2TensorMetadata[];
  /** Its outputs, in order. */
  outputs: V2TensorMetadata[];
  /** Extra facts (nnserve: `<tensor>_scale` and `<tensor>_zero_point` of quantized ones). */
  parameters?: Record<string, V2Parameter>;
}

/** Tensor data: a typed array, or plain numbers (nested or flat) and booleans for BOOL. */
export type V2TensorData =
  | ArrayLike<number>
  | readonly unknown[]
  | ArrayBufferView;

/** A span of a registered shared-memory region. */
export interface V2RegionSpan {
  /** The region's name. */
  region: string;
  /** Bytes of the tensor. */
  byteSize: number;
  /** Where in the region it starts (default 0). */
  offset?: number;
}

/** One input of an inference request. */
export interface V2Input {
  /** The model input's name. */
  name: string;
  /** Its protocol datatype. */
  datatype: string;
  /** Its shape for this request. */
  shape: readonly number[];
  /** The values, row-major; absent when they are in a shared-memory region. */
  data?: V2TensorData;
  /** Send the data as binary after the JSON instead of as JSON numbers. */
  binary?: boolean;
  /** Read the input from a registered region instead. */
  sharedMemory?: V2RegionSpan;
}

/** One output asked for; when `outputs` is given, only those come back. */
export interface V2RequestedOutput {
  /** The model output's name. */
  name: string;
  /** Return it as binary after the JSON. */
  binary?: boolean;
  /** Write it into a registered region instead of returning it. */
  sharedMemory?: V2RegionSpan;
}

/** Options of {@link V2Client.infer}. */
export interface V2InferOptions {
  /** The model version (default: the server's choice, the latest ready one). */
  version?: string;
  /** The request id, echoed in the response. */
  id?: string;
  /** The outputs to return (default: all, as JSON). */
  outputs?: readonly V2RequestedOutput[];
  /** Every output as binary unless an output says otherwise (`binary_data_output`). */
  binaryOutputs?: boolean;
  /** Request parameters to send as they are. */
  parameters?: Record<string, V2Parameter>;
}

/** An output of a response: its data decoded (typed array; booleans for BOOL). */
export interface V2Output {
  /** The model output's name. */
  name: string;
  /** Its protocol datatype. */
  datatype: string;
  /** Its shape in this response. */
  shape: number[];
  /** What the server said of it (`binary_data_size`, `shared_memory_region`, ...). */
  parameters?: Record<string, V2Parameter>;
  /** Absent for an output written into a shared-memory region. */
  data?: TensorData;
}

/** An inference response. */
export interface V2InferResult {
  /** The model that answered. */
  modelName: string;
  /** Its version. */
  modelVersion?: string;
  /** The request's id, echoed. */
  id?: string;
  /** The outputs returned, in the model's order. */
  outputs: V2Output[];
}

/** A registered system shared-memory region, as its status reports it. */
export interface V2RegionStatus {
  /** The region's name. */
  name: string;
  /** What it maps (nnserve: a memory id). */
  key: string;
  /** Where in the key's memory it starts. */
  offset: number;
  /** Its size in bytes. */
  byte_size: number;
}

/** An entry of the repository index. */
export interface V2RepositoryEntry {
  /** The model's name. */
  name: string;
  /** The version. */
  version?: string;
  /** READY, UNAVAILABLE, ... */
  state?: string;
  /** Why it is not ready. */
  reason?: string;
}

/** One duration statistic: how many and how long in all. */
export interface V2Duration {
  /** How many. */
  count: number;
  /** Nanoseconds in all. */
  ns: number;
}

/** The statistics of one model version (the statistics extension). */
export interface V2ModelStatistics {
  /** The model's name. */
  name: string;
  /** The version. */
  version: string;
  /** When it last ran (ms since the epoch; 0 when never). */
  last_inference: number;
  /** Inferences that succeeded. */
  inference_count: number;
  /** Executions that ran them (no batching: the same). */
  execution_count: number;
  /** Durations by phase: success, fail, queue, compute_input, compute_infer, compute_output. */
  inference_stats: Record<
    "success" | "fail" | "queue" | "compute_input" | "compute_infer" | "compute_output",
    V2Duration
  >;
}
