/**
 * The NNAPI vocabulary and wire shapes the SDK speaks (API.md). The SDK is a separate
 * program talking HTTP, so it keeps its own copy of the names instead of importing the
 * service's driver.
 */

/** NNAPI `OperandType` names. */
export const OPERAND_TYPES = [
  "FLOAT32",
  "INT32",
  "UINT32",
  "BOOL",
  "FLOAT16",
  "TENSOR_FLOAT32",
  "TENSOR_INT32",
  "TENSOR_QUANT8_ASYMM",
  "TENSOR_QUANT8_ASYMM_SIGNED",
  "TENSOR_QUANT8_SYMM",
  "TENSOR_QUANT8_SYMM_PER_CHANNEL",
  "TENSOR_QUANT16_ASYMM",
  "TENSOR_QUANT16_SYMM",
  "TENSOR_FLOAT16",
  "TENSOR_BOOL8",
] as const;
export type OperandType = typeof OPERAND_TYPES[number];

/** NNAPI `OperandLifeTime` names. */
export type Lifetime =
  | "TEMPORARY_VARIABLE"
  | "MODEL_INPUT"
  | "MODEL_OUTPUT"
  | "CONSTANT_COPY"
  | "CONSTANT_REFERENCE"
  | "NO_VALUE";

/** NNAPI `OperationType` names through HAL 1.3, in NNAPI enum order. */
export const OPERATION_TYPES = [
  "ADD",
  "AVERAGE_POOL_2D",
  "CONCATENATION",
  "CONV_2D",
  "DEPTHWISE_CONV_2D",
  "DEPTH_TO_SPACE",
  "DEQUANTIZE",
  "EMBEDDING_LOOKUP",
  "FLOOR",
  "FULLY_CONNECTED",
  "HASHTABLE_LOOKUP",
  "L2_NORMALIZATION",
  "L2_POOL_2D",
  "LOCAL_RESPONSE_NORMALIZATION",
  "LOGISTIC",
  "LSH_PROJECTION",
  "LSTM",
  "MAX_POOL_2D",
  "MUL",
  "RELU",
  "RELU1",
  "RELU6",
  "RESHAPE",
  "RESIZE_BILINEAR",
  "RNN",
  "SOFTMAX",
  "SPACE_TO_DEPTH",
  "SVDF",
  "TANH",
  "BATCH_TO_SPACE_ND",
  "DIV",
  "MEAN",
  "PAD",
  "SPACE_TO_BATCH_ND",
  "SQUEEZE",
  "STRIDED_SLICE",
  "SUB",
  "TRANSPOSE",
  "ABS",
  "ARGMAX",
  "ARGMIN",
  "AXIS_ALIGNED_BBOX_TRANSFORM",
  "BIDIRECTIONAL_SEQUENCE_LSTM",
  "BIDIRECTIONAL_SEQUENCE_RNN",
  "BOX_WITH_NMS_LIMIT",
  "CAST",
  "CHANNEL_SHUFFLE",
  "DETECTION_POSTPROCESSING",
  "EQUAL",
  "EXP",
  "EXPAND_DIMS",
  "GATHER",
  "GENERATE_PROPOSALS",
  "GREATER",
  "GREATER_EQUAL",
  "GROUPED_CONV_2D",
  "HEATMAP_MAX_KEYPOINT",
  "INSTANCE_NORMALIZATION",
  "LESS",
  "LESS_EQUAL",
  "LOG",
  "LOGICAL_AND",
  "LOGICAL_NOT",
  "LOGICAL_OR",
  "LOG_SOFTMAX",
  "MAXIMUM",
  "MINIMUM",
  "NEG",
  "NOT_EQUAL",
  "PAD_V2",
  "POW",
  "PRELU",
  "QUANTIZE",
  "QUANTIZED_16BIT_LSTM",
  "RANDOM_MULTINOMIAL",
  "REDUCE_ALL",
  "REDUCE_ANY",
  "REDUCE_MAX",
  "REDUCE_MIN",
  "REDUCE_PROD",
  "REDUCE_SUM",
  "ROI_ALIGN",
  "ROI_POOLING",
  "RSQRT",
  "SELECT",
  "SIN",
  "SLICE",
  "SPLIT",
  "SQRT",
  "TILE",
  "TOPK_V2",
  "TRANSPOSE_CONV_2D",
  "UNIDIRECTIONAL_SEQUENCE_LSTM",
  "UNIDIRECTIONAL_SEQUENCE_RNN",
  "RESIZE_NEAREST_NEIGHBOR",
  "QUANTIZED_LSTM",
  "IF",
  "WHILE",
  "ELU",
  "HARD_SWISH",
  "FILL",
  "RANK",
] as const;
export type OperationType = typeof OPERATION_TYPES[number];

/** The statuses an error response carries (NNAPI `ErrorStatus` plus the service's own). */
export type ErrorStatus =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "OUTPUT_INSUFFICIENT_SIZE"
  | "UNAUTHORIZED"
  | "RESOURCE_EXHAUSTED_TRANSIENT"
  | "RESOURCE_EXHAUSTED_PERSISTENT"
  | "MISSED_DEADLINE_TRANSIENT"
  | "MISSED_DEADLINE_PERSISTENT"
  | "DEVICE_UNAVAILABLE"
  | "GENERAL_FAILURE";

/** Fused activation codes of NNAPI `FuseCode`, for the activation scalar of operations. */
export const FuseCode = { NONE: 0, RELU: 1, RELU1: 2, RELU6: 3 } as const;

/** Implicit padding codes of NNAPI `PaddingCode`. */
export const PaddingCode = { SAME: 1, VALID: 2 } as const;

/** Per-channel quantization of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand. */
export interface ChannelQuant {
  channelDim: number;
  scales: number[];
}

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

/** NNAPI `OutputShape`. */
export interface OutputShape {
  dimensions: number[];
  isSufficient: boolean;
}

/** NNAPI `Timing`, in microseconds. */
export interface Timing {
  onDeviceUs: number;
  inDriverUs: number;
}

/** One execution argument on the wire (API.md "ARG"). */
export type ArgumentJson =
  | { data: number[]; dimensions?: number[] }
  | { base64: string; dimensions?: number[] }
  | { memory: string; offset: number; length: number; dimensions?: number[] }
  | { buffer: string; dimensions?: number[] }
  | { omitted: true }
  | { dimensions?: number[] };

/** The body of `POST /v1/compilations/{id}/executions`. */
export interface ExecutionRequestJson {
  inputs: ArgumentJson[];
  outputs?: ArgumentJson[];
  measureTiming?: boolean;
  deadlineMs?: number;
  outputEncoding?: "json" | "base64";
}

/** One output of an execution response. */
export interface OutputJson {
  dimensions: number[];
  data?: number[];
  base64?: string;
}

/** The body of a successful execution. */
export interface ExecutionResponseJson {
  status: "NONE";
  outputs: OutputJson[];
  outputShapes: OutputShape[];
  timing?: Timing;
}
