/**
 * The NNAPI vocabulary the SDK and the service share: operand types, lifetimes, operation
 * types and error statuses, spelled as docs/api.md and the conformance vectors spell them.
 *
 * The SDK carries its own copy (it imports nothing outside `client/`, so it bundles and runs
 * anywhere on its own); tests/sdk_imports_test.ts checks that it equals the service's
 * (`nnapi/types.ts`, `nnapi/errors.ts`) name for name.
 */

/** Every NNAPI operand type, as models name them. */
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
/** An NNAPI operand type: scalars, tensors of each element type, subgraph references. */
export type OperandType = typeof OPERAND_TYPES[number];

/** Every NNAPI operand lifetime: where an operand's value comes from. */
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
/** An NNAPI operand lifetime. */
export type Lifetime = typeof LIFETIMES[number];

/** Every NNAPI operation type through HAL 1.3, in NNAPI enum order: what `addOperation` takes. */
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
  // nnserve's extensions (NNAPI has no such operations): a tensor's extents at execution,
  // a range of numbers whose length is known only then, a dense layer whose input is
  // quantized at execution, and the error function.
  "SHAPE",
  "RANGE",
  "DYNAMIC_QUANTIZE_FULLY_CONNECTED",
  "ERF",
  // NNAPI feature level 6 (after HAL 1.3), with HAL 1.3's operand types.
  "BATCH_MATMUL",
  // nnserve's extension for what an execution must not reach: it fails with a message.
  "FAIL",
] as const;
/** An NNAPI operation type. */
export type OperationType = typeof OPERATION_TYPES[number];

/**
 * NNAPI error statuses (HAL 1.3 `ErrorStatus` plus the service's UNAUTHORIZED and NOT_FOUND):
 * the `status` of every error body, and of `NnapiError`.
 */
export const ERROR_STATUSES = [
  "INVALID_ARGUMENT",
  "NOT_FOUND",
  "OUTPUT_INSUFFICIENT_SIZE",
  "UNAUTHORIZED",
  "RESOURCE_EXHAUSTED_TRANSIENT",
  "RESOURCE_EXHAUSTED_PERSISTENT",
  "MISSED_DEADLINE_TRANSIENT",
  "MISSED_DEADLINE_PERSISTENT",
  "DEVICE_UNAVAILABLE",
  "GENERAL_FAILURE",
] as const;
/** One of {@link ERROR_STATUSES}. */
export type ErrorStatus = typeof ERROR_STATUSES[number];

/**
 * NNAPI `OutputShape`: an output's dimensions and whether the space given for it sufficed
 * (every output's comes with OUTPUT_INSUFFICIENT_SIZE).
 */
export interface OutputShape {
  /** The dimensions the execution computed. */
  dimensions: number[];
  /** False for an output whose memory region or described dimensions were too small. */
  isSufficient: boolean;
}
