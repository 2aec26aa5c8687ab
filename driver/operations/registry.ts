/**
 * The one table of implemented operations. Adding an operation = adding its module and one
 * line here; `satisfies` makes the compiler check that each entry is keyed by its own type.
 */
import type { OperationType } from "../../nnapi/types.ts";
import type { OperationDefinition } from "./operation.ts";
import { abs } from "./abs.ts";
import { add } from "./add.ts";
import { averagePool2d } from "./average_pool_2d.ts";
import { cast } from "./cast.ts";
import { concatenation } from "./concatenation.ts";
import { conv2d } from "./conv_2d.ts";
import { depthwiseConv2d } from "./depthwise_conv_2d.ts";
import { depthToSpace } from "./depth_to_space.ts";
import { dequantize } from "./dequantize.ts";
import { div } from "./div.ts";
import { embeddingLookup } from "./embedding_lookup.ts";
import { equal } from "./equal.ts";
import { exp } from "./exp.ts";
import { floor } from "./floor.ts";
import { fullyConnected } from "./fully_connected.ts";
import { greater } from "./greater.ts";
import { greaterEqual } from "./greater_equal.ts";
import { groupedConv2d } from "./grouped_conv_2d.ts";
import { hashtableLookup } from "./hashtable_lookup.ts";
import { l2Normalization } from "./l2_normalization.ts";
import { l2Pool2d } from "./l2_pool_2d.ts";
import { less } from "./less.ts";
import { lessEqual } from "./less_equal.ts";
import { localResponseNormalization } from "./local_response_normalization.ts";
import { log } from "./log.ts";
import { logicalAnd } from "./logical_and.ts";
import { logicalNot } from "./logical_not.ts";
import { logicalOr } from "./logical_or.ts";
import { logistic } from "./logistic.ts";
import { lshProjection } from "./lsh_projection.ts";
import { lstm } from "./lstm.ts";
import { maxPool2d } from "./max_pool_2d.ts";
import { maximum } from "./maximum.ts";
import { minimum } from "./minimum.ts";
import { mul } from "./mul.ts";
import { neg } from "./neg.ts";
import { notEqual } from "./not_equal.ts";
import { pow } from "./pow.ts";
import { prelu } from "./prelu.ts";
import { quantize } from "./quantize.ts";
import { relu } from "./relu.ts";
import { relu1 } from "./relu1.ts";
import { relu6 } from "./relu6.ts";
import { reshape } from "./reshape.ts";
import { resizeBilinear } from "./resize_bilinear.ts";
import { resizeNearestNeighbor } from "./resize_nearest_neighbor.ts";
import { rnn } from "./rnn.ts";
import { rsqrt } from "./rsqrt.ts";
import { select } from "./select.ts";
import { sin } from "./sin.ts";
import { softmax } from "./softmax.ts";
import { spaceToDepth } from "./space_to_depth.ts";
import { sqrt } from "./sqrt.ts";
import { sub } from "./sub.ts";
import { svdf } from "./svdf.ts";
import { tanh } from "./tanh.ts";
import { transposeConv2d } from "./transpose_conv_2d.ts";

/** Each operation type maps to a definition of that very type (checked by the compiler). */
export type OperationTable = { readonly [T in OperationType]?: OperationDefinition<T> };

const OPERATIONS = {
  ABS: abs,
  ADD: add,
  AVERAGE_POOL_2D: averagePool2d,
  CAST: cast,
  CONCATENATION: concatenation,
  CONV_2D: conv2d,
  DEPTHWISE_CONV_2D: depthwiseConv2d,
  DEPTH_TO_SPACE: depthToSpace,
  DEQUANTIZE: dequantize,
  DIV: div,
  EMBEDDING_LOOKUP: embeddingLookup,
  EQUAL: equal,
  EXP: exp,
  FLOOR: floor,
  FULLY_CONNECTED: fullyConnected,
  GREATER: greater,
  GREATER_EQUAL: greaterEqual,
  GROUPED_CONV_2D: groupedConv2d,
  HASHTABLE_LOOKUP: hashtableLookup,
  L2_NORMALIZATION: l2Normalization,
  L2_POOL_2D: l2Pool2d,
  LESS: less,
  LESS_EQUAL: lessEqual,
  LOCAL_RESPONSE_NORMALIZATION: localResponseNormalization,
  LOG: log,
  LOGICAL_AND: logicalAnd,
  LOGICAL_NOT: logicalNot,
  LOGICAL_OR: logicalOr,
  LOGISTIC: logistic,
  LSH_PROJECTION: lshProjection,
  LSTM: lstm,
  MAXIMUM: maximum,
  MAX_POOL_2D: maxPool2d,
  MINIMUM: minimum,
  MUL: mul,
  NEG: neg,
  NOT_EQUAL: notEqual,
  POW: pow,
  PRELU: prelu,
  QUANTIZE: quantize,
  RELU: relu,
  RELU1: relu1,
  RELU6: relu6,
  RESHAPE: reshape,
  RESIZE_BILINEAR: resizeBilinear,
  RESIZE_NEAREST_NEIGHBOR: resizeNearestNeighbor,
  RNN: rnn,
  RSQRT: rsqrt,
  SELECT: select,
  SIN: sin,
  SOFTMAX: softmax,
  SPACE_TO_DEPTH: spaceToDepth,
  SQRT: sqrt,
  SUB: sub,
  SVDF: svdf,
  TANH: tanh,
  TRANSPOSE_CONV_2D: transposeConv2d,
} satisfies OperationTable;

/** The definition of an operation type, or undefined when no device implements it. */
export function operationDefinition(type: OperationType): OperationDefinition | undefined {
  return (OPERATIONS as OperationTable)[type];
}

/** Operation types the reference CPU device implements. */
export function implementedOperations(): OperationType[] {
  return Object.keys(OPERATIONS) as OperationType[];
}
