/**
 * ONNX subgraphs (If branches, Loop bodies) as referenced NNAPI subgraphs. ONNX lets a
 * subgraph read any value of the enclosing graphs by name; an NNAPI subgraph sees only its
 * inputs. So every outer value a subgraph reads becomes an explicit input (constants are
 * copied into the subgraph instead), and the operation passes the outer operands in.
 */
import type { BuiltOperand, Quantization } from "../graph_builder.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { type ConversionContext } from "./context.ts";
import { NodeView } from "./node_view.ts";
import { type GraphProto, list } from "./decode.ts";
import type { ElementType } from "./tensors.ts";
import { tensorFromProto } from "./tensors.ts";

/** The names a graph reads from enclosing graphs, in first-read order. */
export function outerReads(graph: GraphProto): string[] {
  const defined = new Set<string>([
    ...list(graph.input).map((v) => v.name ?? ""),
    ...list(graph.initializer).map((t) => t.name ?? ""),
  ]);
  const reads = new Set<string>();
  const read = (name: string) => {
    if (name && !defined.has(name)) reads.add(name);
  };
  for (const proto of list(graph.node)) {
    const node = new NodeView(proto, -1);
    node.inputs.forEach(read);
    for (const inner of node.subgraphs()) outerReads(inner).forEach(read);
    node.outputs.forEach((name) => defined.add(name));
  }
  list(graph.output).forEach((v) => read(v.name ?? ""));
  return [...reads];
}

/** A subgraph input the operation binds by position (a Loop body's iteration number, ...). */
export interface FormalInput {
  name: string;
  type: OperandType;
  dimensions: readonly number[];
  quant?: Quantization;
  elementType: ElementType;
}

/** A subgraph output as the subgraph declares it. */
export interface SubgraphOutput {
  operand: BuiltOperand;
  elementType: ElementType;
}

/** A converted subgraph: its index in the model's `referenced` list and its outputs. */
export interface ConvertedSubgraph {
  index: number;
  outputs: SubgraphOutput[];
}

/** The outer values among `names` that exist only at execution (they become inputs). */
export function runtimeValues(ctx: ConversionContext, names: readonly string[]): string[] {
  const sequence = names.find((name) => ctx.isSequence(name));
  if (sequence !== undefined) {
    throw new Error(
      `the subgraph reads the sequence '${sequence}': a sequence enters an If branch or a ` +
        "Loop body only where the If's condition or the Loop's trip count is known at " +
        "conversion (the branch joins the graph, the loop unrolls)",
    );
  }
  return names.filter((name) => ctx.value(name).kind === "operand");
}

/** The formal input an outer runtime value becomes inside a subgraph. */
export function outerInput(ctx: ConversionContext, name: string): FormalInput {
  const operand = ctx.operand(name);
  return {
    name,
    type: operand.type,
    dimensions: operand.dimensions,
    quant: { scale: operand.scale, zeroPoint: operand.zeroPoint },
    elementType: ctx.elementType(name),
  };
}

/**
 * Converts `graph` into a new referenced subgraph whose inputs are `inputs`, in order (the
 * graph's own inputs bound by position, then outer runtime values); outer constants it
 * reads are copied in. `outputs` names the values that become its outputs (the graph's
 * outputs unless a rule adds its own).
 */
export function convertSubgraph(
  ctx: ConversionContext,
  graph: GraphProto,
  inputs: readonly FormalInput[],
  outputs: readonly string[] = list(graph.output).map((v) => v.name ?? ""),
  extend?: (inner: ConversionContext) => void,
): ConvertedSubgraph {
  const nodes = list(graph.node).map((proto, i) => new NodeView(proto, i));
  const inner = ctx.subgraphContext(nodes, outputs);
  const bound = new Set(inputs.map((input) => input.name));
  for (const input of inputs) {
    const operand = inner.builder.input(input.type, input.dimensions, input.quant);
    inner.setOperand(input.name, operand, input.elementType);
  }
  for (const name of outerReads(graph)) {
    if (bound.has(name)) continue;
    const value = ctx.value(name);
    if (value.kind !== "constant") {
      throw new Error(`the subgraph reads '${name}', which is not passed to it`);
    }
    inner.setConstant(name, value.tensor);
  }
  for (const proto of list(graph.initializer)) {
    inner.setConstant(proto.name ?? "", tensorFromProto(proto));
  }
  inner.convertNodes(nodes);
  extend?.(inner);
  const converted = outputs.map((name) => ({
    operand: inner.builder.output(inner.operand(name)),
    elementType: inner.elementType(name),
  }));
  return { index: inner.builder.reference(), outputs: converted };
}

/** A condition as NNAPI takes it: TENSOR_BOOL8 of shape [1]. */
export function conditionOperand(ctx: ConversionContext, name: string): BuiltOperand {
  if (ctx.elementType(name) !== "bool") {
    throw new Error(`the condition '${name}' is ${ctx.elementType(name)}, not bool`);
  }
  const operand = ctx.operand(name);
  const rank = operand.dimensions.length;
  if (rank === 1 && operand.dimensions[0] === 1) return operand;
  if (rank > 1) {
    // [1, 1, ...]: ANY over every axis but the first leaves [1].
    const axes = ctx.builder.constant(
      "TENSOR_INT32",
      [rank - 1],
      Int32Array.from({ length: rank - 1 }, (_, i) => i + 1),
    );
    return ctx.emit("REDUCE_ANY", [operand, axes, ctx.builder.bool(false)], [
      { type: "TENSOR_BOOL8", elementType: "bool" },
    ])[0];
  }
  // A scalar: AND with true declares the [1] NNAPI requires.
  const condition = ctx.builder.temporary("TENSOR_BOOL8", [1]);
  const yes = ctx.builder.constant("TENSOR_BOOL8", [1], new Uint8Array([1]));
  ctx.builder.operation("LOGICAL_AND", [operand, yes], [condition]);
  return condition;
}

/** Names the operation's outputs after the subgraph outputs they carry. */
export function bindOutputs(
  ctx: ConversionContext,
  names: readonly string[],
  outputs: readonly SubgraphOutput[],
  dimensions: (j: number) => readonly number[],
): BuiltOperand[] {
  return outputs.map((output, j) => {
    const { type, scale, zeroPoint } = output.operand;
    const operand = ctx.builder.temporary(type, dimensions(j), { scale, zeroPoint });
    if (names[j]) ctx.setOperand(names[j], operand, output.elementType);
    return operand;
  });
}
