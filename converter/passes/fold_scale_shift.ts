/**
 * Folds a constant scale and shift that follows a convolution into its weights:
 * `conv(x) * s + b` becomes one convolution with filter `w * s` and bias `bias * s + b`
 * (per output channel). Exporters leave these as element-wise operations of their own
 * (PaddleOCR's PP-LCNetV3 puts a learnable scale and bias after every convolution), each a
 * full pass over the tensor. Folded only where nothing else sees the values in between: the
 * convolution is float32 with a constant filter and bias and no activation, its output is
 * read by the MUL (or ADD) alone and is not a model output, and `s` and `b` are constants of
 * one value or one per output channel. The ADD's activation moves onto the convolution.
 * Rounding differs from the unfolded graph by float32 rounding only, as for a
 * BatchNormalization folded into a convolution.
 */
import type { OperandJson, OperationJson } from "../../driver/model/model_schema.ts";
import { activationInput } from "./fuse_activations.ts";
import type { ModelGraph } from "./model_graph.ts";

/** Where a convolution's output channels lie: its filter's axis and the output's. */
interface ConvolutionChannels {
  count: number;
  /** Filter element index -> output channel. */
  channelOf(element: number): number;
  /** The output's channel axis (NHWC 3, NCHW 1). */
  outputAxis: number;
}

function channels(graph: ModelGraph, conv: OperationJson): ConvolutionChannels | undefined {
  const filter = graph.operands[conv.inputs[1]];
  const [d0, , , d3] = filter.dimensions;
  if (filter.dimensions.length !== 4) return undefined;
  const nchw = isNchw(graph, conv);
  if (nchw === undefined) return undefined;
  const outputAxis = nchw ? 1 : 3;
  if (conv.type === "CONV_2D") {
    const perChannel = filter.dimensions.slice(1).reduce((a, b) => a * b, 1);
    return { count: d0, channelOf: (e) => Math.floor(e / perChannel), outputAxis };
  }
  return { count: d3, channelOf: (e) => e % d3, outputAxis };
}

/** The convolution's layout flag (false when absent), or undefined when not constant. */
function isNchw(graph: ModelGraph, conv: OperationJson): boolean | undefined {
  const k = activationInput(graph, conv);
  if (k === undefined) return undefined;
  // The layout flag follows the activation (then come the dilations).
  const flag = conv.inputs[k + 1];
  if (flag === undefined) return false;
  if (graph.operands[flag].type !== "BOOL") return undefined;
  const value = graph.constantValues(flag);
  return value === undefined ? undefined : value[0] !== 0;
}

/**
 * The constant's value per output channel when it is one value or one per channel laid
 * along the output's channel axis (trailing ones after it), else undefined.
 */
function perChannel(
  graph: ModelGraph,
  operand: number,
  output: OperandJson,
  ch: ConvolutionChannels,
): number[] | undefined {
  const o = graph.operands[operand];
  if (o.type !== "TENSOR_FLOAT32") return undefined;
  const values = graph.constantValues(operand);
  if (!values) return undefined;
  if (values.length === 1) return new Array(ch.count).fill(values[0]);
  if (values.length !== ch.count) return undefined;
  // Aligned to the output's trailing axes: the channel extent at the channel axis, ones after.
  const rank = output.dimensions.length;
  const dims = o.dimensions;
  const at = dims.length - (rank - ch.outputAxis);
  const fits = at >= 0 && dims.length <= rank && dims[at] === ch.count &&
    dims.every((d, i) => i === at || d === 1);
  return fits ? values : undefined;
}

function floatConstant(values: Float32Array, like: OperandJson): OperandJson {
  return {
    type: "TENSOR_FLOAT32",
    dimensions: [...like.dimensions],
    scale: 0,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY",
    value: { base64: new Uint8Array(values.buffer).toBase64() },
  };
}

/** The other input of a binary MUL/ADD reading `operand`, and its activation code. */
function otherInput(graph: ModelGraph, op: OperationJson, operand: number) {
  if (op.inputs.length !== 3) return undefined;
  const [a, b, act] = op.inputs;
  const activation = graph.constantValues(act)?.[0];
  if (activation === undefined) return undefined;
  if (a === operand && b !== operand) return { other: b, activation };
  if (b === operand && a !== operand) return { other: a, activation };
  return undefined;
}

/** Folds every scale and shift it can; returns how many operations it removed. */
export function foldScaleShift(graph: ModelGraph): number {
  let removed = 0;
  graph.operations.forEach((conv, convIndex) => {
    if (!conv || (conv.type !== "CONV_2D" && conv.type !== "DEPTHWISE_CONV_2D")) return;
    const k = activationInput(graph, conv);
    const [input, filterIndex, biasIndex] = conv.inputs;
    if (k === undefined || graph.constantValues(conv.inputs[k])?.[0] !== 0) return;
    if (graph.operands[input].type !== "TENSOR_FLOAT32" || conv.outputs.length !== 1) return;
    const filter = graph.constantValues(filterIndex);
    const bias = graph.constantValues(biasIndex);
    const ch = channels(graph, conv);
    if (!filter || !bias || !ch || bias.length !== ch.count) return;
    const scale = new Array<number>(ch.count).fill(1);
    const shift = new Array<number>(ch.count).fill(0);
    let activation = 0;
    let output = conv.outputs[0];
    const folded: number[] = [];
    for (const type of ["MUL", "ADD"] as const) {
      const next = graph.soleReader(output);
      if (!next || next.operation.type !== type || activation !== 0) continue;
      const operands = otherInput(graph, next.operation, output);
      const values = operands &&
        perChannel(graph, operands.other, graph.operands[output], ch);
      if (!operands || !values) continue;
      if (type === "MUL") values.forEach((v, c) => scale[c] = v);
      else values.forEach((v, c) => shift[c] = v);
      activation = operands.activation;
      // MUL's activation would clamp between the scale and the shift.
      if (type === "MUL" && activation !== 0) return;
      output = next.operation.outputs[0];
      folded.push(next.index);
    }
    if (folded.length === 0) return;
    const newFilter = Float32Array.from(filter, (w, e) => w * scale[ch.channelOf(e)]);
    const newBias = Float32Array.from(bias, (b, c) => b * scale[c] + shift[c]);
    graph.setInput(
      convIndex,
      1,
      graph.addOperand(floatConstant(newFilter, graph.operands[filterIndex])),
    );
    graph.setInput(
      convIndex,
      2,
      graph.addOperand(floatConstant(newBias, graph.operands[biasIndex])),
    );
    graph.setInput(convIndex, k, graph.int32Scalar(activation));
    graph.setOutput(convIndex, 0, output);
    folded.forEach((index) => graph.remove(index));
    removed += folded.length;
  });
  return removed;
}
