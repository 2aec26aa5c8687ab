/**
 * The one table of implemented operations. Adding an operation = adding its module and one
 * line here; `satisfies` makes the compiler check that each entry is keyed by its own type.
 */
import type { OperationType } from "../nnapi/types.ts";
import type { OperationDefinition } from "./operation.ts";
import { abs } from "./abs.ts";
import { add } from "./add.ts";
import { argmax } from "./argmax.ts";
import { argmin } from "./argmin.ts";
import { averagePool2d } from "./average_pool_2d.ts";
import { axisAlignedBboxTransform } from "./axis_aligned_bbox_transform.ts";
import { batchMatmul } from "./batch_matmul.ts";
import { batchToSpaceNd } from "./batch_to_space_nd.ts";
import { bidirectionalSequenceLstm } from "./bidirectional_sequence_lstm.ts";
import { bidirectionalSequenceRnn } from "./bidirectional_sequence_rnn.ts";
import { boxWithNmsLimit } from "./box_with_nms_limit.ts";
import { cast } from "./cast.ts";
import { channelShuffle } from "./channel_shuffle.ts";
import { concatenation } from "./concatenation.ts";
import { conv2d } from "./conv_2d.ts";
import { depthwiseConv2d } from "./depthwise_conv_2d.ts";
import { depthToSpace } from "./depth_to_space.ts";
import { dequantize } from "./dequantize.ts";
import { detectionPostprocessing } from "./detection_postprocessing.ts";
import { div } from "./div.ts";
import { elu } from "./elu.ts";
import { embeddingLookup } from "./embedding_lookup.ts";
import { equal } from "./equal.ts";
import { exp } from "./exp.ts";
import { expandDims } from "./expand_dims.ts";
import { fill } from "./fill.ts";
import { floor } from "./floor.ts";
import { fullyConnected } from "./fully_connected.ts";
import { gather } from "./gather.ts";
import { generateProposals } from "./generate_proposals.ts";
import { greater } from "./greater.ts";
import { greaterEqual } from "./greater_equal.ts";
import { groupedConv2d } from "./grouped_conv_2d.ts";
import { hardSwish } from "./hard_swish.ts";
import { hashtableLookup } from "./hashtable_lookup.ts";
import { heatmapMaxKeypoint } from "./heatmap_max_keypoint.ts";
import { ifOperation } from "./if.ts";
import { instanceNormalization } from "./instance_normalization.ts";
import { l2Normalization } from "./l2_normalization.ts";
import { l2Pool2d } from "./l2_pool_2d.ts";
import { less } from "./less.ts";
import { lessEqual } from "./less_equal.ts";
import { localResponseNormalization } from "./local_response_normalization.ts";
import { log } from "./log.ts";
import { logSoftmax } from "./log_softmax.ts";
import { logicalAnd } from "./logical_and.ts";
import { logicalNot } from "./logical_not.ts";
import { logicalOr } from "./logical_or.ts";
import { logistic } from "./logistic.ts";
import { lshProjection } from "./lsh_projection.ts";
import { lstm } from "./lstm.ts";
import { maxPool2d } from "./max_pool_2d.ts";
import { maximum } from "./maximum.ts";
import { mean } from "./mean.ts";
import { minimum } from "./minimum.ts";
import { mul } from "./mul.ts";
import { neg } from "./neg.ts";
import { notEqual } from "./not_equal.ts";
import { pad } from "./pad.ts";
import { padV2 } from "./pad_v2.ts";
import { pow } from "./pow.ts";
import { prelu } from "./prelu.ts";
import { quantize } from "./quantize.ts";
import { quantized16bitLstm } from "./quantized_16bit_lstm.ts";
import { quantizedLstm } from "./quantized_lstm.ts";
import { randomMultinomial } from "./random_multinomial.ts";
import { rank } from "./rank.ts";
import { shape } from "./shape.ts";
import { range } from "./range.ts";
import { dynamicQuantizeFullyConnected } from "./dynamic_quantize_fully_connected.ts";
import { erf } from "./erf.ts";
import { fail } from "./fail.ts";
import { reduceAll } from "./reduce_all.ts";
import { reduceAny } from "./reduce_any.ts";
import { reduceMax } from "./reduce_max.ts";
import { reduceMin } from "./reduce_min.ts";
import { reduceProd } from "./reduce_prod.ts";
import { reduceSum } from "./reduce_sum.ts";
import { relu } from "./relu.ts";
import { relu1 } from "./relu1.ts";
import { relu6 } from "./relu6.ts";
import { reshape } from "./reshape.ts";
import { resizeBilinear } from "./resize_bilinear.ts";
import { resizeNearestNeighbor } from "./resize_nearest_neighbor.ts";
import { rnn } from "./rnn.ts";
import { roiAlign } from "./roi_align.ts";
import { roiPooling } from "./roi_pooling.ts";
import { rsqrt } from "./rsqrt.ts";
import { select } from "./select.ts";
import { sin } from "./sin.ts";
import { slice } from "./slice.ts";
import { softmax } from "./softmax.ts";
import { spaceToBatchNd } from "./space_to_batch_nd.ts";
import { spaceToDepth } from "./space_to_depth.ts";
import { split } from "./split.ts";
import { sqrt } from "./sqrt.ts";
import { squeeze } from "./squeeze.ts";
import { stridedSlice } from "./strided_slice.ts";
import { sub } from "./sub.ts";
import { svdf } from "./svdf.ts";
import { tanh } from "./tanh.ts";
import { tile } from "./tile.ts";
import { topkV2 } from "./topk_v2.ts";
import { transpose } from "./transpose.ts";
import { transposeConv2d } from "./transpose_conv_2d.ts";
import { unidirectionalSequenceLstm } from "./unidirectional_sequence_lstm.ts";
import { unidirectionalSequenceRnn } from "./unidirectional_sequence_rnn.ts";
import { whileOperation } from "./while.ts";

/** Each operation type maps to a definition of that very type (checked by the compiler). */
export type OperationTable = { readonly [T in OperationType]?: OperationDefinition<T> };

const OPERATIONS = {
  ABS: abs,
  ADD: add,
  ARGMAX: argmax,
  ARGMIN: argmin,
  AVERAGE_POOL_2D: averagePool2d,
  AXIS_ALIGNED_BBOX_TRANSFORM: axisAlignedBboxTransform,
  BATCH_TO_SPACE_ND: batchToSpaceNd,
  BIDIRECTIONAL_SEQUENCE_LSTM: bidirectionalSequenceLstm,
  BIDIRECTIONAL_SEQUENCE_RNN: bidirectionalSequenceRnn,
  BOX_WITH_NMS_LIMIT: boxWithNmsLimit,
  CAST: cast,
  CHANNEL_SHUFFLE: channelShuffle,
  CONCATENATION: concatenation,
  CONV_2D: conv2d,
  DEPTHWISE_CONV_2D: depthwiseConv2d,
  DEPTH_TO_SPACE: depthToSpace,
  DEQUANTIZE: dequantize,
  DETECTION_POSTPROCESSING: detectionPostprocessing,
  DIV: div,
  ELU: elu,
  EMBEDDING_LOOKUP: embeddingLookup,
  EQUAL: equal,
  EXP: exp,
  EXPAND_DIMS: expandDims,
  FILL: fill,
  FLOOR: floor,
  FULLY_CONNECTED: fullyConnected,
  GATHER: gather,
  GENERATE_PROPOSALS: generateProposals,
  GREATER: greater,
  GREATER_EQUAL: greaterEqual,
  GROUPED_CONV_2D: groupedConv2d,
  HARD_SWISH: hardSwish,
  HASHTABLE_LOOKUP: hashtableLookup,
  HEATMAP_MAX_KEYPOINT: heatmapMaxKeypoint,
  IF: ifOperation,
  INSTANCE_NORMALIZATION: instanceNormalization,
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
  LOG_SOFTMAX: logSoftmax,
  LSH_PROJECTION: lshProjection,
  LSTM: lstm,
  MAXIMUM: maximum,
  MAX_POOL_2D: maxPool2d,
  MEAN: mean,
  MINIMUM: minimum,
  MUL: mul,
  NEG: neg,
  NOT_EQUAL: notEqual,
  PAD: pad,
  PAD_V2: padV2,
  POW: pow,
  PRELU: prelu,
  QUANTIZE: quantize,
  QUANTIZED_16BIT_LSTM: quantized16bitLstm,
  QUANTIZED_LSTM: quantizedLstm,
  RANDOM_MULTINOMIAL: randomMultinomial,
  RANK: rank,
  SHAPE: shape,
  RANGE: range,
  DYNAMIC_QUANTIZE_FULLY_CONNECTED: dynamicQuantizeFullyConnected,
  ERF: erf,
  FAIL: fail,
  BATCH_MATMUL: batchMatmul,
  REDUCE_ALL: reduceAll,
  REDUCE_ANY: reduceAny,
  REDUCE_MAX: reduceMax,
  REDUCE_MIN: reduceMin,
  REDUCE_PROD: reduceProd,
  REDUCE_SUM: reduceSum,
  RELU: relu,
  RELU1: relu1,
  RELU6: relu6,
  RESHAPE: reshape,
  RESIZE_BILINEAR: resizeBilinear,
  RESIZE_NEAREST_NEIGHBOR: resizeNearestNeighbor,
  RNN: rnn,
  ROI_ALIGN: roiAlign,
  ROI_POOLING: roiPooling,
  RSQRT: rsqrt,
  SELECT: select,
  SIN: sin,
  SLICE: slice,
  SOFTMAX: softmax,
  SPACE_TO_BATCH_ND: spaceToBatchNd,
  SPACE_TO_DEPTH: spaceToDepth,
  SPLIT: split,
  SQRT: sqrt,
  SQUEEZE: squeeze,
  STRIDED_SLICE: stridedSlice,
  SUB: sub,
  SVDF: svdf,
  TANH: tanh,
  TILE: tile,
  TOPK_V2: topkV2,
  TRANSPOSE: transpose,
  TRANSPOSE_CONV_2D: transposeConv2d,
  UNIDIRECTIONAL_SEQUENCE_LSTM: unidirectionalSequenceLstm,
  UNIDIRECTIONAL_SEQUENCE_RNN: unidirectionalSequenceRnn,
  WHILE: whileOperation,
} satisfies OperationTable;

/** The definition of an operation type, or undefined when no device implements it. */
export function operationDefinition(type: OperationType): OperationDefinition | undefined {
  return (OPERATIONS as OperationTable)[type];
}

/** Operation types the reference CPU device implements. */
export function implementedOperations(): OperationType[] {
  return Object.keys(OPERATIONS) as OperationType[];
}
