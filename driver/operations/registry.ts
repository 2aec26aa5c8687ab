/**
 * The one table of implemented operations. Adding an operation = adding its module and one
 * line here; `satisfies` makes the compiler check that each entry is keyed by its own type.
 */
import type { OperationType } from "../../nnapi/types.ts";
import type { OperationDefinition } from "./operation.ts";
import { add } from "./add.ts";
import { averagePool2d } from "./average_pool_2d.ts";
import { concatenation } from "./concatenation.ts";
import { conv2d } from "./conv_2d.ts";
import { depthwiseConv2d } from "./depthwise_conv_2d.ts";
import { depthToSpace } from "./depth_to_space.ts";
import { dequantize } from "./dequantize.ts";
import { embeddingLookup } from "./embedding_lookup.ts";
import { floor } from "./floor.ts";
import { fullyConnected } from "./fully_connected.ts";
import { hashtableLookup } from "./hashtable_lookup.ts";
import { l2Normalization } from "./l2_normalization.ts";
import { l2Pool2d } from "./l2_pool_2d.ts";
import { localResponseNormalization } from "./local_response_normalization.ts";
import { logistic } from "./logistic.ts";
import { lshProjection } from "./lsh_projection.ts";
import { lstm } from "./lstm.ts";
import { maxPool2d } from "./max_pool_2d.ts";
import { mul } from "./mul.ts";
import { relu } from "./relu.ts";
import { relu1 } from "./relu1.ts";
import { relu6 } from "./relu6.ts";
import { reshape } from "./reshape.ts";
import { resizeBilinear } from "./resize_bilinear.ts";
import { rnn } from "./rnn.ts";
import { softmax } from "./softmax.ts";
import { spaceToDepth } from "./space_to_depth.ts";
import { svdf } from "./svdf.ts";
import { tanh } from "./tanh.ts";

/** Each operation type maps to a definition of that very type (checked by the compiler). */
export type OperationTable = { readonly [T in OperationType]?: OperationDefinition<T> };

const OPERATIONS = {
  ADD: add,
  AVERAGE_POOL_2D: averagePool2d,
  CONCATENATION: concatenation,
  CONV_2D: conv2d,
  DEPTHWISE_CONV_2D: depthwiseConv2d,
  DEPTH_TO_SPACE: depthToSpace,
  DEQUANTIZE: dequantize,
  EMBEDDING_LOOKUP: embeddingLookup,
  FLOOR: floor,
  FULLY_CONNECTED: fullyConnected,
  HASHTABLE_LOOKUP: hashtableLookup,
  L2_NORMALIZATION: l2Normalization,
  L2_POOL_2D: l2Pool2d,
  LOCAL_RESPONSE_NORMALIZATION: localResponseNormalization,
  LOGISTIC: logistic,
  LSH_PROJECTION: lshProjection,
  LSTM: lstm,
  MAX_POOL_2D: maxPool2d,
  MUL: mul,
  RELU: relu,
  RELU1: relu1,
  RELU6: relu6,
  RESHAPE: reshape,
  RESIZE_BILINEAR: resizeBilinear,
  RNN: rnn,
  SOFTMAX: softmax,
  SPACE_TO_DEPTH: spaceToDepth,
  SVDF: svdf,
  TANH: tanh,
} satisfies OperationTable;

/** The definition of an operation type, or undefined when no device implements it. */
export function operationDefinition(type: OperationType): OperationDefinition | undefined {
  return (OPERATIONS as OperationTable)[type];
}

/** Operation types the reference CPU device implements. */
export function implementedOperations(): OperationType[] {
  return Object.keys(OPERATIONS) as OperationType[];
}
