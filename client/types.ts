/**
 * The NNAPI vocabulary and wire shapes the SDK speaks (API.md). The vocabulary (operand,
 * lifetime and operation names, error statuses, fuse and padding codes, the element type of
 * each operand type) is the service's own: `nnapi/types.ts`, `nnapi/tensor.ts` and
 * `nnapi/errors.ts` import nothing else, so the SDK shares them without pulling in any of
 * the service, and the two can never disagree on a name.
 */
import type { OutputShape } from "../nnapi/errors.ts";
import type { ChannelQuant, JsonNumber } from "../nnapi/tensor.ts";
import {
  FUSED_NONE,
  FUSED_RELU,
  FUSED_RELU1,
  FUSED_RELU6,
  type Lifetime,
  type OperandType,
  type OperationType,
  PADDING_SAME,
  PADDING_VALID,
} from "../nnapi/types.ts";

export { ERROR_STATUSES, type ErrorStatus, type OutputShape } from "../nnapi/errors.ts";
export type { ChannelQuant } from "../nnapi/tensor.ts";
export {
  type Lifetime,
  LIFETIMES,
  OPERAND_TYPES,
  type OperandType,
  OPERATION_TYPES,
  type OperationType,
} from "../nnapi/types.ts";

/** Fused activation codes of NNAPI `FuseCode`, for the activation scalar of operations. */
export const FuseCode = {
  NONE: FUSED_NONE,
  RELU: FUSED_RELU,
  RELU1: FUSED_RELU1,
  RELU6: FUSED_RELU6,
} as const;

/** Implicit padding codes of NNAPI `PaddingCode`. */
export const PaddingCode = { SAME: PADDING_SAME, VALID: PADDING_VALID } as const;

/** A constant's value on the wire: JSON numbers or little-endian bytes in base64. */
export type ValueJson = number[] | { base64: string };

/** One operand of a wire model. */
export interface OperandJson {
  type: OperandType;
  dimensions: number[];
  scale: number;
  zeroPoint: number;
  lifetime: Lifetime;
  value?: ValueJson;
  channelQuant?: ChannelQuant;
}

/** One operation of a wire model. */
export interface OperationJson {
  type: OperationType;
  inputs: number[];
  outputs: number[];
}

/** The model object of `POST /v1/models` (the CTS vectors' `model`). */
export interface ModelJson {
  operands: OperandJson[];
  operations: OperationJson[];
  inputIndexes: number[];
  outputIndexes: number[];
  relaxComputationFloat32toFloat16: boolean;
}

/** A model input or output as the model metadata describes it. */
export interface OperandDescription {
  operand: number;
  type: OperandType;
  /** Declared dimensions; 0 marks an extent known only at execution. */
  dimensions: number[];
  /** The source name (imported models). */
  name?: string;
}

/** What the SDK needs to know of a model to encode inputs and decode outputs. */
export interface ModelSignature {
  inputs: OperandDescription[];
  outputs: OperandDescription[];
}

/** `GET /v1/models/{id}` and `POST /v1/models` answers. */
export interface ModelInfo extends ModelSignature {
  id: string;
  checksum: string;
  createdAt?: string;
  byteSize?: number;
  halVersion?: string;
  operandCount?: number;
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
  name?: string;
  version?: string;
}

/** Which page of a listing: at most `limit` items (1-1000), from a previous page's `next`. */
export interface PageOptions {
  limit?: number;
  cursor?: string;
}

/** A compilation as listings report it (its plan comes with `GET /v1/compilations/{id}`). */
export interface CompilationSummary {
  id: string;
  model: string;
  preference: string;
  priority: string;
  devices: string[];
  createdAt: string;
}

/** An ONNX input or output as the imported file declares it. */
export interface OnnxPort {
  name: string;
  elementType: string;
  /** Numbers, or the names of symbolic extents (given at execution). */
  shape: (number | string)[];
}

/** What `POST /v1/models` reports of an ONNX import. */
export interface OnnxImportInfo {
  opset: number;
  layout: string;
  notes: string[];
  inputs: OnnxPort[];
  outputs: OnnxPort[];
}

/** One device of `GET /v1/devices`; the service may report more fields. */
export interface DeviceInfo {
  name: string;
  type: string;
  version: string;
  featureLevel: number;
  [field: string]: unknown;
}

/** Per device, whether it supports each operation of a model (model order). */
export interface DeviceSupport {
  name: string;
  supported: boolean[];
}

/** NNAPI `Timing`, in microseconds. */
export interface Timing {
  onDeviceUs: number;
  inDriverUs: number;
  /** Time of each plan step (a run of operations on one device), on the device that ran it. */
  steps?: { device: string; operations: number[]; onDeviceUs: number }[];
}

/** One execution argument on the wire (API.md "ARG"). */
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
  inputs: ArgumentJson[];
  outputs?: ArgumentJson[];
  measureTiming?: boolean;
  deadlineMs?: number;
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
