/**
 * The NNAPI vocabulary and wire shapes the SDK speaks (docs/api.md). The vocabulary (operand,
 * lifetime and operation names, error statuses, fuse and padding codes) is the service's
 * own, copied into `vocabulary.ts` and `tensor.ts` so that the SDK imports nothing outside
 * `client/`; tests/sdk_imports_test.ts checks that the copies never disagree with the
 * service's `nnapi/` modules.
 */
import type { ChannelQuant, JsonNumber } from "./tensor.ts";
import type { Lifetime, OperandType, OperationType, OutputShape } from "./vocabulary.ts";

export type { ChannelQuant } from "./tensor.ts";
export {
  ERROR_STATUSES,
  type ErrorStatus,
  type Lifetime,
  LIFETIMES,
  OPERAND_TYPES,
  type OperandType,
  OPERATION_TYPES,
  type OperationType,
  type OutputShape,
} from "./vocabulary.ts";

/** Fused activation codes of NNAPI `FuseCode`, for the activation scalar of operations. */
export const FuseCode = { NONE: 0, RELU: 1, RELU1: 2, RELU6: 3 } as const;

/** Implicit padding codes of NNAPI `PaddingCode`. */
export const PaddingCode = { SAME: 1, VALID: 2 } as const;

/** A constant's value on the wire: JSON numbers or little-endian bytes in base64. */
export type ValueJson = number[] | { base64: string };

/** One operand of a wire model. */
export interface OperandJson {
  /** Element type (tensors) or scalar type. */
  type: OperandType;
  /** Empty for scalars; 0 marks an extent known only at execution. */
  dimensions: number[];
  /** Quantization scale of quantized types; 0 otherwise. */
  scale: number;
  /** Quantization zero point of asymmetric types; 0 otherwise. */
  zeroPoint: number;
  /** Where the operand's value comes from (an input, a constant, another operation). */
  lifetime: Lifetime;
  /** A constant's value (CONSTANT_COPY, or CONSTANT_REFERENCE given inline). */
  value?: ValueJson;
  /** Per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand. */
  channelQuant?: ChannelQuant;
}

/** One operation of a wire model. */
export interface OperationJson {
  /** The NNAPI operation. */
  type: OperationType;
  /** Operand indexes in the operation's input order (NNAPI's operation reference). */
  inputs: number[];
  /** Operand indexes it writes, in its output order. */
  outputs: number[];
}

/** The model object of `POST /v1/models` (the CTS vectors' `model`). */
export interface ModelJson {
  /** Every operand; operations and the model's inputs and outputs refer to them by index. */
  operands: OperandJson[];
  /** In an order where every operand is written before it is read. */
  operations: OperationJson[];
  /** The operands executions give values to, in execution input order. */
  inputIndexes: number[];
  /** The operands executions return, in execution output order. */
  outputIndexes: number[];
  /** Whether float32 operations may run in float16 precision. */
  relaxComputationFloat32toFloat16: boolean;
}

/** A model input or output as the model metadata describes it. */
export interface OperandDescription {
  /** The operand's index in the model. */
  operand: number;
  /** Its type, which execution data are converted to and decoded as. */
  type: OperandType;
  /** Declared dimensions; 0 marks an extent known only at execution. */
  dimensions: number[];
  /** Quantized types: the real value of a stored q is `scale * (q - zeroPoint)`. */
  scale?: number;
  /** Quantized types: the stored value of real zero. */
  zeroPoint?: number;
  /** The source name (imported models). */
  name?: string;
}

/** What the SDK needs to know of a model to encode inputs and decode outputs. */
export interface ModelSignature {
  /** The model's inputs, in execution input order. */
  inputs: OperandDescription[];
  /** The model's outputs, in execution output order. */
  outputs: OperandDescription[];
}

/** `GET /v1/models/{id}` and `POST /v1/models` answers. */
export interface ModelInfo extends ModelSignature {
  /** The model's id, which compilations name it by. */
  id: string;
  /** SHA-256 (hex) of the stored model: equal models have equal checksums. */
  checksum: string;
  /** When it was registered (ISO 8601). */
  createdAt?: string;
  /** Bytes the stored model takes, constants included. */
  byteSize?: number;
  /** The lowest NNAPI HAL version (e.g. "V1_2") that has every operation as used. */
  halVersion?: string;
  /** Operands of the model, subgraphs included. */
  operandCount?: number;
  /** Operations of the model, subgraphs included. */
  operationCount?: number;
  /** The name given at registration or import. */
  name?: string;
  /** Its version under that name ("1" when the name came without one). */
  version?: string;
  /** How an imported ONNX file became this model. */
  onnx?: OnnxImportInfo;
}

/** A model's name and version (a positive integer, "1" when absent). */
export interface ModelNaming {
  /** A name chosen by the client; listings can select by it. */
  name?: string;
  /** A positive integer as a string; a new model of a taken name needs a new one. */
  version?: string;
}

/** Which page of a listing: at most `limit` items (1-1000), from a previous page's `next`. */
export interface PageOptions {
  /** Items per page, 1-1000 (the service's default: 100). */
  limit?: number;
  /** The `next` of the previous page; absent for the first. */
  cursor?: string;
}

/** A compilation as listings report it (its plan comes with `GET /v1/compilations/{id}`). */
export interface CompilationSummary {
  /** The compilation's id. */
  id: string;
  /** The id of the model it prepared. */
  model: string;
  /** The execution preference it was prepared for (`CompileOptions.preference`). */
  preference: string;
  /** Its priority among the client's executions (`CompileOptions.priority`). */
  priority: string;
  /** The devices its plan may run on. */
  devices: string[];
  /** When it was created (ISO 8601). */
  createdAt: string;
}

/** An ONNX input or output as the imported file declares it. */
export interface OnnxPort {
  /** The ONNX graph input's or output's name (execution inputs may be keyed by it). */
  name: string;
  /** The ONNX element type, e.g. "float" or "int64". */
  elementType: string;
  /** Numbers, or the names of symbolic extents (given at execution). */
  shape: (number | string)[];
}

/** What `POST /v1/models` reports of an ONNX import. */
export interface OnnxImportInfo {
  /** The ONNX opset the file was converted as. */
  opset: number;
  /**
   * The image layout the converted operations run in ("NHWC" or "NCHW"); inputs and
   * outputs keep their ONNX shapes either way.
   */
  layout: string;
  /** What the conversion did that the client should know (int64 narrowed to int32, ...). */
  notes: string[];
  /** The file's graph inputs, in model input order. */
  inputs: OnnxPort[];
  /** The file's graph outputs, in model output order. */
  outputs: OnnxPort[];
}

/** One device of `GET /v1/devices`; the service may report more fields. */
export interface DeviceInfo {
  /** The name `CompileOptions.devices` selects it by. */
  name: string;
  /** NNAPI device type: "CPU", "GPU", "ACCELERATOR" or "OTHER". */
  type: string;
  /** The device's own version string. */
  version: string;
  /** The NNAPI feature level it implements, as an Android API level (30: HAL 1.3). */
  featureLevel: number;
  /** Fields this SDK does not type (later versions of the service may add more). */
  [field: string]: unknown;
}

/** Per device, whether it supports each operation of a model (model order). */
export interface DeviceSupport {
  /** The device, as `CompileOptions.devices` names it. */
  name: string;
  /** One flag per operation of the model, in model order. */
  supported: boolean[];
}

/** NNAPI `Timing`, in microseconds. */
export interface Timing {
  /** Time spent computing on the devices. */
  onDeviceUs: number;
  /** Time in the driver: the devices' time plus scheduling and copies. */
  inDriverUs: number;
  /** Time of each plan step (a run of operations on one device), on the device that ran it. */
  steps?: { device: string; operations: number[]; onDeviceUs: number }[];
}

/** One execution argument on the wire (docs/api.md "ARG"). */
export type ArgumentJson =
  | { data: JsonNumber[]; dimensions?: number[] }
  | { base64: string; dimensions?: number[] }
  | { memory: string; offset: number; length: number; dimensions?: number[] }
  | { buffer: string; dimensions?: number[] }
  | { omitted: true }
  | { parameters: { binary_data_size: number }; dimensions?: number[] }
  | { dimensions?: number[] };

/** The body of `POST /v1/compilations/{id}/executions`. */
export interface ExecutionRequestJson {
  /** One per model input, in model order. */
  inputs: ArgumentJson[];
  /** One per model output when any is described; `{}` returns an output inline. */
  outputs?: ArgumentJson[];
  /** Asks for on-device and in-driver durations. */
  measureTiming?: boolean;
  /** Fails the execution with MISSED_DEADLINE_* when it takes longer. */
  deadlineMs?: number;
  /** How inline outputs come back: JSON numbers (default), base64, or a framed binary answer. */
  outputEncoding?: "json" | "base64" | "binary";
}

/** One output of an execution response. */
export interface OutputJson {
  dimensions: number[];
  /** Non-finite values come as "NaN", "Infinity", "-Infinity" (JSON has no such numbers). */
  data?: JsonNumber[];
  base64?: string;
  /** In a framed answer: the output's bytes follow the header, in output order. */
  parameters?: { binary_data_size: number };
}

/** The body of a successful execution. */
export interface ExecutionResponseJson {
  status: "NONE";
  outputs: OutputJson[];
  outputShapes: OutputShape[];
  timing?: Timing;
}
