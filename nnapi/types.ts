/**
 * NNAPI vocabulary: operand types, lifetimes, operation types and HAL versions, as the
 * names used by the model format (the CTS vectors and API.md).
 */

export const HAL_VERSIONS = ["V1_0", "V1_1", "V1_2", "V1_3"] as const;
export type HalVersion = typeof HAL_VERSIONS[number];

/** Orders HAL versions so that an operation's requirement can be compared with a device's. */
export function halAtLeast(version: HalVersion, min: HalVersion): boolean {
  return HAL_VERSIONS.indexOf(version) >= HAL_VERSIONS.indexOf(min);
}

/** The later of two HAL versions. */
export function laterHal(a: HalVersion, b: HalVersion): HalVersion {
  return halAtLeast(a, b) ? a : b;
}

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
  /** A reference to a referenced subgraph (NNAPI `SUBGRAPH`): IF branches, WHILE bodies. */
  "SUBGRAPH",
] as const;
export type OperandType = typeof OPERAND_TYPES[number];

export const LIFETIMES = [
  "TEMPORARY_VARIABLE",
  "MODEL_INPUT",
  "MODEL_OUTPUT",
  "CONSTANT_COPY",
  "CONSTANT_REFERENCE",
  "NO_VALUE",
  /** A SUBGRAPH operand: its value is the index of a referenced subgraph. */
  "SUBGRAPH",
] as const;
export type Lifetime = typeof LIFETIMES[number];

/** Every NNAPI operation type through HAL 1.3, in NNAPI enum order. */
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

/** Fused activation codes of NNAPI `FuseCode`. */
export const FUSED_NONE = 0;
export const FUSED_RELU = 1;
export const FUSED_RELU1 = 2;
export const FUSED_RELU6 = 3;

/** Padding codes of NNAPI `PaddingCode` (implicit padding). */
export const PADDING_SAME = 1;
export const PADDING_VALID = 2;
