/**
 * ONNX -> NNAPI: decodes the file, turns graph inputs into model inputs, initializers into
 * constants, and each node through its rule (folding what is constant), then marks the graph
 * outputs. The result is an ordinary NNAPI model plus the ONNX names, types and shapes of
 * its inputs and outputs. The rules emit NCHW image operations in NNAPI's NCHW mode (their
 * layout flag); the passes (`../passes/`) then fuse activations and move the image
 * operations to NHWC where that removes transposes.
 */
import type { ModelJson } from "../../driver/model/model_schema.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { asNodeFault, ConversionLimitError, fileFault, unsupportedNode } from "../errors.ts";
import { keepShapes } from "./symbolic_shapes.ts";
import { ConversionContext } from "./context.ts";
import { NodeView } from "./node_view.ts";
import {
  decodeOnnx,
  type GraphProto,
  type Int64,
  int64,
  list,
  type ValueInfoProto,
} from "./decode.ts";
import { checkGraphNames } from "./graph_names.ts";
import {
  checkGraphSize,
  checkNotStopped,
  DEFAULT_IMPORT_LIMITS,
  type OnnxImportLimits,
  withConversionScope,
} from "./limits.ts";
import { RULES } from "./rules/index.ts";
import { specOf } from "./rules/common.ts";
import { type BuiltOperand, GraphBuilder } from "../graph_builder.ts";
import { type ImageLayout, optimizeModel } from "../passes/index.ts";
import {
  dataTypeName,
  type ElementType,
  elementType,
  hostTensor,
  symbolOf,
  tensorFromProto,
} from "./tensors.ts";

/** An input or output of the converted model as the ONNX file names it. */
export interface OnnxTensorInfo {
  /** The ONNX value name. */
  name: string;
  /** The ONNX element type (float32, int64, ...). */
  elementType: ElementType;
  /** ONNX dimensions: numbers, or the symbolic names of extents given at execution. */
  shape: (number | string)[];
  /** The NNAPI operand type it has in the model. */
  operandType: OperandType;
  /** The NNAPI dimensions (0 = given at execution). */
  dimensions: number[];
}

/** A converted model. */
export interface OnnxConversion {
  model: ModelJson;
  inputs: OnnxTensorInfo[];
  outputs: OnnxTensorInfo[];
  /**
   * The image layout the model's operations run in: NHWC when moving NCHW image operations
   * to NHWC removes transposes (inputs and outputs keep their ONNX shapes either way).
   */
  layout: ImageLayout;
  opset: number;
  /** What the client should know (int64 narrowed to int32, ...). */
  notes: string[];
  /** Inputs fixed to values at conversion (`values`): constants, not inputs of the model. */
  fixedInputs: FixedInput[];
}

/** An ONNX input fixed to values at conversion. */
export interface FixedInput {
  name: string;
  elementType: ElementType;
  dimensions: number[];
  values: number[];
}

const INPUT_TYPES: Partial<Record<ElementType, OperandType>> = {
  float32: "TENSOR_FLOAT32",
  float16: "TENSOR_FLOAT16",
  int64: "TENSOR_INT32",
  int32: "TENSOR_INT32",
  bool: "TENSOR_BOOL8",
};

/** Conversion options. */
export interface OnnxConversionOptions {
  /**
   * Fixed shapes for inputs by name: symbolic extents become these numbers (fixed extents
   * must agree; 0 keeps the file's extent, symbolic or not). The model is then specialized
   * to them: Shape-driven subgraphs fold and plans get static layouts.
   */
  shapes?: Record<string, readonly number[]>;
  /**
   * Inputs fixed to these values at conversion, by name (a sample rate, a flag): each becomes
   * a constant and is no longer an input, so what depends only on it folds (an If on it
   * selects its branch). Shaped by `shapes` or the ONNX shape; a 1-D input of symbolic
   * length takes the number of values.
   */
  values?: Record<string, readonly number[]>;
}

/** How a conversion is bounded: its limits, and a flag that stops it. */
export interface ConversionBounds {
  /** The conversion's limits (default {@link DEFAULT_IMPORT_LIMITS}). */
  limits?: Partial<OnnxImportLimits>;
  /**
   * Another thread sets `stop[0]` to 1 to stop the conversion: it throws `ConversionStopped`
   * at its next check (between nodes, within long folds).
   */
  stop?: Int32Array;
}

/**
 * Converts an ONNX file; every refusal is an INVALID_ARGUMENT naming the cause, but a graph
 * past the limits' node or initializer count, which is RESOURCE_EXHAUSTED_PERSISTENT before
 * any node is converted. Every tensor computed meanwhile is checked against the limits
 * before it is allocated.
 */
export function convertOnnx(
  bytes: Uint8Array,
  options: OnnxConversionOptions = {},
  bounds: ConversionBounds = {},
): OnnxConversion {
  const { graph, opset } = decodeOnnx(bytes);
  const limits = { ...DEFAULT_IMPORT_LIMITS, ...bounds.limits };
  checkGraphSize(graph, limits);
  checkGraphNames(graph);
  // Past twice the model's operations the conversion stops: the model could not be
  // registered (the passes remove some operations, never half of them).
  const builder = new GraphBuilder({
    maxOperations: 2 * limits.maxOperations,
    limitName: `twice NNSERVE_MAX_OPERATIONS=${limits.maxOperations}`,
  });
  return withConversionScope(
    limits,
    bounds.stop,
    () => convertGraph(graph, opset, options, builder),
  );
}

function convertGraph(
  graph: GraphProto,
  opset: number,
  options: OnnxConversionOptions,
  builder: GraphBuilder,
): OnnxConversion {
  const nodes = list(graph.node).map((proto, i) => new NodeView(proto, i));
  const graphOutputs = list(graph.output).map((o) => o.name ?? "");
  const ctx = new ConversionContext(opset, nodes, graphOutputs, convertNode, builder);
  const initializers = new Set<string>();
  for (const proto of list(graph.initializer)) {
    checkNotStopped();
    try {
      ctx.setConstant(proto.name ?? "", tensorFromProto(proto));
    } catch (error) {
      const details = error instanceof ConversionLimitError ? error.details : undefined;
      throw fileFault(`initializer: ${error instanceof Error ? error.message : error}`, details);
    }
    initializers.add(proto.name ?? "");
  }
  const graphInputs = list(graph.input).filter((info) => !initializers.has(info.name ?? ""));
  for (const [what, given] of [["shape", options.shapes], ["value", options.values]] as const) {
    for (const name of Object.keys(given ?? {})) {
      if (!graphInputs.some((info) => info.name === name)) {
        throw fileFault(`a ${what} is given for '${name}', which is not an input of the graph`);
      }
    }
  }
  const inputs: OnnxTensorInfo[] = [];
  const fixedInputs: FixedInput[] = [];
  for (const info of graphInputs) {
    const name = info.name ?? "";
    const shape = options.shapes?.[name];
    const values = options.values?.[name];
    if (values) fixedInputs.push(fixInput(ctx, info, shape, values));
    else inputs.push(addInput(ctx, info, shape));
  }
  ctx.convertNodes(nodes);
  const outputs = list(graph.output).map((info) => markOutput(ctx, info));
  const { model, layout } = optimizeModel(ctx.builder.build());
  return { model, inputs, outputs, layout, opset, notes: groupNotes(ctx.notes), fixedInputs };
}

/** Nodes a grouped note names before it says how many more there are. */
const NAMED_IN_A_NOTE = 3;

/**
 * Notes of one kind about many nodes ("what: 'node'") as one line each: "what (35 nodes:
 * 'a', 'b', 'c' and 32 more)", in the order the kinds first came; other notes as they are.
 */
export function groupNotes(notes: readonly string[]): string[] {
  const groups = new Map<string, string[]>();
  for (const note of notes) {
    const at = note.lastIndexOf(": '");
    const what = at > 0 && note.endsWith("'") ? note.slice(0, at) : note;
    const nodes = groups.get(what) ?? [];
    if (what !== note) nodes.push(note.slice(at + 2));
    groups.set(what, nodes);
  }
  return [...groups].map(([what, nodes]) => {
    if (nodes.length === 0) return what;
    if (nodes.length === 1) return `${what}: ${nodes[0]}`;
    const named = nodes.slice(0, NAMED_IN_A_NOTE).join(", ");
    const more = nodes.length - NAMED_IN_A_NOTE;
    return `${what} (${nodes.length} nodes: ${named}${more > 0 ? ` and ${more} more` : ""})`;
  });
}

function convertNode(ctx: ConversionContext, node: NodeView): void {
  checkNotStopped();
  if (ctx.isAbsorbed(node)) return;
  const domain = node.domain;
  if (domain && domain !== "ai.onnx") {
    throw unsupportedNode(node, `operators of domain '${domain}' are not supported`);
  }
  const rule = RULES[node.opType];
  if (!rule) throw unsupportedNode(node, `op type ${node.opType} is not supported`);
  try {
    if (rule.fold) {
      const given = node.inputs.map((name) => name ? ctx.value(name) : undefined);
      const tensors = given.map((v) => v?.kind === "constant" ? v.tensor : undefined);
      const movable = (i: number) => rule.moves === "all" || !!rule.moves?.includes(i);
      const foldable = given.every((v, i) =>
        v === undefined || (v.kind === "constant" && (!v.tensor.partial || movable(i)))
      );
      const folded = foldable ? rule.fold(node, tensors, ctx) : undefined;
      if (folded) {
        const fromPartial = tensors.some((t) => t?.partial);
        folded.forEach((tensor, i) => {
          if (fromPartial && tensor.data.some((v) => symbolOf(v) !== undefined)) {
            tensor = { ...tensor, partial: true };
          }
          ctx.setConstant(node.outputs[i], tensor);
        });
        return;
      }
    }
    rule.convert(node, ctx);
  } catch (error) {
    throw asNodeFault(node, error);
  }
  if (ctx.restTaken) return; // the graph continues inside the subgraphs of an IF
  keepShapes(ctx, node);
  for (const name of node.outputs) {
    // Every output something still reads must be produced.
    if (name && ctx.isNeeded(name) && !ctx.has(name)) ctx.value(name);
  }
}

function tensorType(info: ValueInfoProto, what: string) {
  const tensor = info.type?.tensorType;
  if (!tensor) throw fileFault(`${what} '${info.name}' is not a tensor`);
  const type = elementType(tensor.elemType ?? 0);
  if (!(type in INPUT_TYPES)) {
    throw fileFault(
      `${what} '${info.name}' has element type ${
        dataTypeName(tensor.elemType ?? 0)
      }, which the converter does not take`,
    );
  }
  const shape = list(tensor.shape?.dim).map((d) =>
    d.dimParam
      ? d.dimParam
      : d.dimValue !== null && d.dimValue !== undefined
      ? int64(d.dimValue as Int64)
      : "?"
  );
  return { elementType: type as ElementType, shape };
}

function addInput(
  ctx: ConversionContext,
  info: ValueInfoProto,
  fixed: readonly number[] | undefined,
): OnnxTensorInfo {
  const name = info.name ?? "";
  const { elementType, shape } = tensorType(info, "input");
  let dimensions = shape.map((d) => typeof d === "number" ? d : 0);
  if (fixed) {
    const agrees = fixed.length === shape.length &&
      fixed.every((d, i) =>
        d === 0 ||
        (Number.isInteger(d) && d > 0 && (typeof shape[i] !== "number" || shape[i] === d))
      );
    if (!agrees) {
      throw fileFault(
        `the shape [${fixed}] given for input '${name}' does not fit its ONNX shape [${shape}]`,
      );
    }
    dimensions = fixed.map((d, i) => d || dimensions[i]);
  }
  const open = shape.filter((_, i) => dimensions[i] === 0);
  if (open.length > 0) {
    // Say it where the user looks: what a new extent costs, and the way to fix it.
    const example = shape.map((d, i) => dimensions[i] === 0 ? `<${d}>` : d).join("x");
    ctx.notes.push(
      `input '${name}' keeps ${open.map((d) => `'${d}'`).join(", ")} to execution: each ` +
        "executor binds the kernels and lays out the tensors for a new set of input shapes " +
        "at the first execution that brings it (kept for the 8 most recent); where the " +
        `extents are fixed, give them at import (?shape=${name}:${example})`,
    );
  }
  if (dimensions.length === 0) {
    // NNAPI reads a tensor of rank 0 as one of unknown rank: an ONNX scalar travels as [1].
    dimensions = [1];
    ctx.notes.push(`input '${name}' is a scalar in the ONNX model and has shape [1] here`);
  }
  const operandType = INPUT_TYPES[elementType]!;
  const operand = ctx.builder.input(operandType, dimensions);
  ctx.setOperand(name, operand, elementType);
  if (shape.length === 0) ctx.markScalar(name);
  // Its extents known only at execution by their ONNX names ("?" stays its own).
  ctx.setSymbols(
    name,
    dimensions.map((d, i) => d !== 0 ? d : shape[i] === "?" ? `${name}#${i}` : `${shape[i]}`),
  );
  if (elementType === "int64") {
    ctx.notes.push(
      `input '${name}' is int64 in the ONNX model and TENSOR_INT32 here: values must fit int32`,
    );
  }
  return { name, elementType, shape, operandType, dimensions };
}

/** An input fixed to `values` at conversion: a constant from here on. */
function fixInput(
  ctx: ConversionContext,
  info: ValueInfoProto,
  fixed: readonly number[] | undefined,
  values: readonly number[],
): FixedInput {
  const name = info.name ?? "";
  const { elementType, shape } = tensorType(info, "input");
  const dims = fixed ??
    (shape.length === 1 && typeof shape[0] !== "number"
      ? [values.length]
      : shape.map((d) => typeof d === "number" ? d : NaN));
  if (dims.some((d) => !Number.isInteger(d) || d <= 0)) {
    throw fileFault(
      `input '${name}' has shape [${shape}]: give its whole shape (?shape=) to fix its values`,
    );
  }
  const count = dims.reduce((a, b) => a * b, 1);
  if (values.length !== count) {
    throw fileFault(`${values.length} values given for input '${name}' of shape [${dims}]`);
  }
  const integral = elementType !== "float32" && elementType !== "float16";
  const limit = elementType === "int64" ? Number.MAX_SAFE_INTEGER : 2 ** 31 - 1;
  const fits = (v: number) =>
    elementType === "bool"
      ? v === 0 || v === 1
      : !integral || (Number.isInteger(v) && Math.abs(v) <= limit);
  if (!values.every(fits)) {
    throw fileFault(`the values given for input '${name}' are not all ${elementType} values`);
  }
  ctx.setConstant(name, hostTensor(elementType, dims, values));
  ctx.notes.push(`input '${name}' is fixed to [${values}] at import and is not an input here`);
  return { name, elementType, dimensions: [...dims], values: [...values] };
}

/**
 * The value as an operand of its own type: an integer carried as float32 (dynamic
 * quantization) becomes TENSOR_INT32, or a quant8 tensor of scale 1 holding the integers.
 */
function uncarried(ctx: ConversionContext, name: string): BuiltOperand {
  const operand = ctx.operand(name);
  const type = ctx.elementType(name);
  if (operand.type !== "TENSOR_FLOAT32" || type === "float32") return operand;
  if (type === "int32") return ctx.emit("CAST", [operand], [specOf("int32")])[0];
  const quant8 = type === "uint8" ? "TENSOR_QUANT8_ASYMM" : "TENSOR_QUANT8_ASYMM_SIGNED";
  return ctx.emit("QUANTIZE", [operand], [{
    type: quant8,
    elementType: type,
    quant: { scale: 1, zeroPoint: 0 },
  }])[0];
}

function markOutput(ctx: ConversionContext, info: ValueInfoProto): OnnxTensorInfo {
  const name = info.name ?? "";
  const type = ctx.elementType(name);
  const operand = ctx.builder.output(uncarried(ctx, name));
  if (type === "int64") {
    ctx.notes.push(`output '${name}' is int64 in the ONNX model and TENSOR_INT32 here`);
  }
  const declared = info.type?.tensorType?.shape?.dim;
  const shape = declared
    ? list(declared).map((d) => d.dimParam ? d.dimParam : int64(d.dimValue as Int64))
    : [...operand.dimensions];
  return {
    name,
    elementType: type,
    shape,
    operandType: operand.type,
    dimensions: [...operand.dimensions],
  };
}
