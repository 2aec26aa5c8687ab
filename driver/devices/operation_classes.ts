/**
 * Operation classes for costing: devices differ in speed per class far more than within
 * one (a SIMD matrix product is tens of times the reference's; an element-wise pass a few
 * times; a copy about the same), so calibration measures each class on each device and the
 * partitioner prices an operation's work at its class's speed.
 */
import type { OperationType } from "../../nnapi/types.ts";
import type { DeviceCosts, OperationClass } from "./device.ts";

/** Matrix products: multiply-adds over a reduction (convolutions, dense layers, recurrences). */
const GEMM: ReadonlySet<OperationType> = new Set<OperationType>([
  "CONV_2D",
  "GROUPED_CONV_2D",
  "TRANSPOSE_CONV_2D",
  "FULLY_CONNECTED",
  "DYNAMIC_QUANTIZE_FULLY_CONNECTED",
  "BATCH_MATMUL",
  "LSTM",
  "BIDIRECTIONAL_SEQUENCE_LSTM",
  "UNIDIRECTIONAL_SEQUENCE_LSTM",
  "QUANTIZED_16BIT_LSTM",
  "QUANTIZED_LSTM",
  "RNN",
  "BIDIRECTIONAL_SEQUENCE_RNN",
  "UNIDIRECTIONAL_SEQUENCE_RNN",
  "SVDF",
]);

/** Windows: each output reads a small neighbourhood (depthwise, pooling, resizing). */
const WINDOW: ReadonlySet<OperationType> = new Set<OperationType>([
  "DEPTHWISE_CONV_2D",
  "AVERAGE_POOL_2D",
  "MAX_POOL_2D",
  "L2_POOL_2D",
  "RESIZE_BILINEAR",
  "RESIZE_NEAREST_NEIGHBOR",
  "ROI_ALIGN",
  "ROI_POOLING",
  "LOCAL_RESPONSE_NORMALIZATION",
]);

/** Data movement: elements copied to new places, no arithmetic. */
const MOVEMENT: ReadonlySet<OperationType> = new Set<OperationType>([
  "RESHAPE",
  "SQUEEZE",
  "EXPAND_DIMS",
  "TRANSPOSE",
  "CONCATENATION",
  "SPLIT",
  "GATHER",
  "SLICE",
  "STRIDED_SLICE",
  "PAD",
  "PAD_V2",
  "TILE",
  "DEPTH_TO_SPACE",
  "SPACE_TO_DEPTH",
  "BATCH_TO_SPACE_ND",
  "SPACE_TO_BATCH_ND",
  "CHANNEL_SHUFFLE",
]);

/** The class an operation type's work is priced by (element-wise unless listed). */
export function operationClass(type: OperationType): OperationClass {
  if (GEMM.has(type)) return "gemm";
  if (WINDOW.has(type)) return "window";
  if (MOVEMENT.has(type)) return "movement";
  if (type === "IF" || type === "WHILE") return "control";
  return "elementwise";
}

/** µs per unit of work of an operation of `type` on a device of these costs. */
export function microsPerWork(costs: DeviceCosts, type: OperationType): number {
  return costs.perClass?.[operationClass(type)] ?? costs.microsPerWork;
}
