/**
 * What every ONNX conversion rule works with: the node (inputs, outputs, attributes), the
 * values known so far (constants kept on the host for folding, or operands of the NNAPI
 * model), and `emit`, which appends an NNAPI operation and infers its output shapes with the
 * driver's own shape rules (one shape helper: the operation's `prepare`).
 */
import { type BuiltOperand, GraphBuilder, type Quantization } from "../graph_builder.ts";
import type { DeclaredOperand } from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { OperandType, OperationType } from "../../nnapi/types.ts";
import { type GraphProto, list } from "./decode.ts";
import { NodeView } from "./node_view.ts";
import { type ElementType, type HostTensor, nnapiConstant } from "./tensors.ts";
import { runtimeValues } from "./runtime_extents.ts";
import { inferShapes } from "./emitted_shapes.ts";
import { filled, specOf } from "./rules/common.ts";
import type { SymbolicShape } from "./symbolic_shapes.ts";

/** Why a value computed from extents known only at execution cannot be used. */
export const DEPENDS_ON_EXTENTS = "is computed from extents known only at execution (a Shape of " +
  "a dynamic input), which an NNAPI model cannot compute; fix the input's shape at import " +
  "(?shape=) to fold it";

/** A value of the graph: known at conversion, or an operand of the model. */
export type Value =
  | { kind: "constant"; tensor: HostTensor }
  | {
    kind: "operand";
    operand: BuiltOperand;
    elementType: ElementType;
    /** An ONNX scalar (rank 0) carried as [1]: NNAPI reads rank 0 as an unknown rank. */
    scalar?: boolean;
  };

/** What an emitted operation's output is: its type and, when quantized, its parameters. */
export interface OutputSpec {
  type: OperandType;
  elementType: ElementType;
  quant?: Quantization;
  /**
   * The output's extents (0: known only at execution) where the rule knows them better than
   * shape inference can (a RESHAPE to a target computed at execution).
   */
  dims?: readonly number[];
}

/** How the converter turns one node into operations (set by `convert.ts`). */
export type NodeConverter = (ctx: ConversionContext, node: NodeView) => void;

/**
 * The conversion state shared by the rules: of the main graph, or of a subgraph (an If
 * branch, a Loop body) that becomes a referenced NNAPI subgraph of the same model.
 */
export class ConversionContext {
  readonly #convertNode: NodeConverter;
  readonly #values = new Map<string, Value>();
  readonly #materialized = new Map<string, BuiltOperand>();
  readonly #uses = new Map<string, number>();
  readonly #consumers = new Map<string, NodeView[]>();
  readonly #absorbed = new Set<number>();
  readonly #pendingAliases = new Map<string, string>();
  #restTaken = false;
  /** ONNX sequences, known at conversion: the names of the values they hold, in order. */
  readonly #sequences = new Map<string, readonly string[]>();
  /** Symbolic shapes of values with extents known only at execution (`symbolic_shapes.ts`). */
  readonly #symbols = new Map<string, SymbolicShape>();
  #snapshots = 0;
  /** The node lists being converted, innermost last, each with its next position. */
  readonly #frames: { nodes: readonly NodeView[]; next: number }[] = [];

  constructor(
    readonly opset: number,
    nodes: readonly NodeView[],
    /** The values this graph gives back (the model's outputs, or a subgraph's). */
    readonly graphOutputs: readonly string[],
    convertNode: NodeConverter,
    /** The graph the operations go to. */
    readonly builder: GraphBuilder = new GraphBuilder(),
    /** Things the response should tell the client (int64 narrowed, layout, ...). */
    readonly notes: string[] = [],
  ) {
    this.#convertNode = convertNode;
    for (const node of nodes) {
      for (const name of node.inputs) {
        if (!name) continue;
        this.#uses.set(name, this.uses(name) + 1);
        // Pushed, not copied: a value read by many nodes must not cost a copy per reader.
        const consumers = this.#consumers.get(name);
        if (consumers) consumers.push(node);
        else this.#consumers.set(name, [node]);
      }
      // A subgraph may read any outer value: count its reads too, so no rule folds a
      // value away that a branch or loop body still needs.
      for (const graph of node.subgraphs()) this.#countSubgraphUses(graph);
    }
    for (const name of graphOutputs) this.#uses.set(name, this.uses(name) + 1);
  }

  /** Converts nodes in order (the graph's own, or those of a branch inlined by a rule). */
  convertNodes(nodes: readonly NodeView[]): void {
    const frame = { nodes, next: 0 };
    this.#frames.push(frame);
    try {
      while (frame.next < nodes.length) this.#convertNode(this, nodes[frame.next++]);
    } finally {
      this.#frames.pop();
    }
  }

  /**
   * Whether a rule took the rest of the graph ({@link takeRest}): the outputs of the nodes
   * converted then are produced inside the subgraphs that continue it.
   */
  get restTaken(): boolean {
    return this.#restTaken;
  }

  /**
   * Takes the nodes not yet converted, of every list being converted (innermost first), and
   * ends their conversion here: the caller converts them itself (an If whose branches give
   * values of different ranks continues the graph inside each branch). Nodes an earlier rule
   * absorbed are left out: their outputs exist already.
   */
  takeRest(): NodeView[] {
    this.#restTaken = true;
    const rest: NodeView[] = [];
    for (let f = this.#frames.length - 1; f >= 0; f--) {
      const frame = this.#frames[f];
      rest.push(...frame.nodes.slice(frame.next).filter((node) => !this.isAbsorbed(node)));
      frame.next = frame.nodes.length;
    }
    return rest;
  }

  /**
   * A context for a subgraph of this graph: its operations go to a new referenced subgraph
   * of the same model; it shares the notes.
   */
  subgraphContext(nodes: readonly NodeView[], graphOutputs: readonly string[]): ConversionContext {
    return new ConversionContext(
      this.opset,
      nodes,
      graphOutputs,
      this.#convertNode,
      this.builder.subgraphBuilder(),
      this.notes,
    );
  }

  #countSubgraphUses(graph: GraphProto): void {
    for (const proto of list(graph.node)) {
      const node = new NodeView(proto, -1);
      for (const name of node.inputs) if (name) this.#uses.set(name, this.uses(name) + 1);
      for (const inner of node.subgraphs()) this.#countSubgraphUses(inner);
    }
    for (const output of list(graph.output)) {
      if (output.name) this.#uses.set(output.name, this.uses(output.name) + 1);
    }
  }

  /** How many node inputs and graph outputs read `name`. */
  uses(name: string): number {
    return this.#uses.get(name) ?? 0;
  }

  /** The nodes that read `name`, one entry per input naming it (subgraphs' reads not included). */
  consumers(name: string): readonly NodeView[] {
    return this.#consumers.get(name) ?? [];
  }

  /** The node that alone reads `name` (and no graph output does), if there is one. */
  soleConsumer(name: string): NodeView | undefined {
    const consumers = this.#consumers.get(name) ?? [];
    return this.uses(name) === 1 && consumers.length === 1 ? consumers[0] : undefined;
  }

  /** Marks a later node as computed already (folded into an earlier one's operation). */
  absorb(node: NodeView): void {
    this.#absorbed.add(node.index);
  }

  /** Whether an earlier rule absorbed the node. */
  isAbsorbed(node: NodeView): boolean {
    return this.#absorbed.has(node.index);
  }

  /** Whether `name` is needed: read by a graph output or a node no rule absorbed. */
  isNeeded(name: string): boolean {
    const readers = this.consumers(name);
    return this.uses(name) > readers.length || readers.some((r) => !this.isAbsorbed(r));
  }

  /** The value named `name`; throws when nothing produced it. */
  value(name: string): Value {
    const value = this.#values.get(name);
    if (!value) {
      if (this.#sequences.has(name)) {
        throw new Error(`input '${name}' is a sequence, which only sequence operators take`);
      }
      throw new Error(`input '${name}' is not produced by any node or initializer`);
    }
    return value;
  }

  /** Whether a node or initializer produced `name` (a tensor or a sequence). */
  has(name: string): boolean {
    return this.#values.has(name) || this.#sequences.has(name);
  }

  /** Whether `name` is an ONNX sequence. */
  isSequence(name: string): boolean {
    return this.#sequences.has(name);
  }

  /** The names of the values sequence `name` holds. */
  sequence(name: string): readonly string[] {
    const items = this.#sequences.get(name);
    if (!items) throw new Error(`input '${name}' is not a sequence`);
    return items;
  }

  /** Makes `name` the sequence of these values (names that {@link snapshot} gave). */
  setSequence(name: string, items: readonly string[]): void {
    this.#forget(name);
    this.#sequences.set(name, items);
  }

  /**
   * Drops what `name` held before it is set again (a Loop unrolled at conversion names each
   * iteration's values alike): its value, sequence, and the operand built for its constant.
   */
  #forget(name: string): void {
    this.#symbols.delete(name);
    this.#values.delete(name);
    this.#sequences.delete(name);
    this.#materialized.delete(name);
  }

  /**
   * A new name holding what `name` holds now (a tensor or a sequence), which no later node
   * overwrites: what a sequence keeps, and what a Loop unrolled at conversion carries from
   * one iteration to the next (each iteration names its values alike).
   */
  snapshot(name: string): string {
    const kept = `${name}#${this.#snapshots++}`;
    this.bind(kept, name);
    return kept;
  }

  /** Makes `alias` hold what `name` holds (a tensor or a sequence). */
  bind(alias: string, name: string): void {
    const items = this.#sequences.get(name);
    if (items) this.setSequence(alias, items);
    else this.alias(alias, name);
  }

  /**
   * The host tensor of a constant value; undefined for a runtime value and for a partial one
   * (extents known only at execution), which only `shapeValues` reads.
   */
  constant(name: string): HostTensor | undefined {
    const value = this.value(name);
    return value.kind === "constant" && !value.tensor.partial ? value.tensor : undefined;
  }

  /** The host tensor of a value that must be known at conversion. */
  requireConstant(name: string, what: string): HostTensor {
    const tensor = this.constant(name);
    if (!tensor) {
      if (this.#isPartial(name)) throw new Error(`${what} ('${name}') ${DEPENDS_ON_EXTENTS}`);
      throw new Error(`${what} ('${name}') must be a constant`);
    }
    return tensor;
  }

  /**
   * A shape-like int64 tensor known at conversion, possibly partial: extents known only at
   * execution are `extentSymbol`s.
   */
  shapeValues(name: string, what: string): HostTensor {
    const value = this.value(name);
    if (value.kind !== "constant") throw new Error(`${what} ('${name}') must be a constant`);
    return value.tensor;
  }

  #isPartial(name: string): boolean {
    const value = this.value(name);
    return value.kind === "constant" && value.tensor.partial === true;
  }

  /** The value's ONNX element type. */
  elementType(name: string): ElementType {
    const value = this.value(name);
    return value.kind === "constant" ? value.tensor.type : value.elementType;
  }

  /**
   * The value as a model operand (constants are added to the model once, on first use; a
   * partial one, holding extents known only at execution, is computed there).
   */
  operand(name: string): BuiltOperand {
    const value = this.value(name);
    if (value.kind === "operand") return value.operand;
    let operand = this.#materialized.get(name);
    if (!operand) {
      if (value.tensor.partial) operand = runtimeValues(this, value.tensor);
      else if (value.tensor.dims.includes(0)) operand = this.#empty(value.tensor);
      else {
        const { type, data } = nnapiConstant(value.tensor);
        operand = this.builder.constant(type, value.tensor.dims, data);
      }
      this.#materialized.set(name, operand);
    }
    return operand;
  }

  /**
   * A constant with no elements (optimum's placeholder for a cache it does not fill): NNAPI
   * reads an extent of 0 as unknown, so a constant cannot hold it; FILL makes it at execution.
   */
  #empty(tensor: HostTensor): BuiltOperand {
    const shape = this.builder.constant(
      "TENSOR_INT32",
      [tensor.dims.length],
      Int32Array.from(tensor.dims),
    );
    return filled(this, shape, 0, { ...specOf(tensor.type), dims: tensor.dims });
  }

  /** The value's ONNX dimensions (0 = known only at execution; [] a scalar). */
  dims(name: string): readonly number[] {
    const value = this.value(name);
    if (value.kind === "constant") return value.tensor.dims;
    return value.scalar ? [] : value.operand.dimensions;
  }

  /**
   * The value's shape as symbols: a number where known, a name where known only at execution
   * (ONNX's `dim_param` where it came through element-wise operations, else one of its own).
   */
  symbols(name: string): SymbolicShape {
    return this.#symbols.get(name) ??
      this.dims(name).map((d, axis) => d === 0 ? `${name}#${axis}` : d);
  }

  /** Records the value's symbolic shape (it must agree with its dims). */
  setSymbols(name: string, symbols: SymbolicShape): void {
    this.#symbols.set(name, symbols);
  }

  /** Marks an operand of shape [1] as the ONNX scalar it carries. */
  markScalar(name: string): void {
    const value = this.value(name);
    if (value.kind !== "operand" || value.operand.dimensions.join() !== "1") {
      throw new Error(`'${name}' is not a value of shape [1]`);
    }
    this.#values.set(name, { ...value, scalar: true });
  }

  setConstant(name: string, tensor: HostTensor): void {
    this.#forget(name);
    this.#values.set(name, { kind: "constant", tensor });
  }

  setOperand(name: string, operand: BuiltOperand, elementType: ElementType): void {
    this.#forget(name);
    this.#values.set(name, { kind: "operand", operand, elementType });
    const alias = this.#pendingAliases.get(name);
    if (alias !== undefined) this.#values.set(alias, this.#values.get(name)!);
  }

  /** Makes `alias` name whatever `name` will be set to (a value folded into a later one). */
  aliasLater(alias: string, name: string): void {
    this.#pendingAliases.set(name, alias);
  }

  /** Makes `alias` name the same value as `name` (Identity, Dropout, folded nodes). */
  alias(alias: string, name: string): void {
    const value = this.value(name);
    const symbols = this.#symbols.get(name);
    this.#forget(alias);
    this.#values.set(alias, value);
    if (symbols) this.#symbols.set(alias, symbols);
  }

  /**
   * Appends an NNAPI operation whose outputs are new temporaries, with shapes inferred by
   * the operation's own `prepare`.
   */
  emit(
    type: OperationType,
    inputs: readonly BuiltOperand[],
    outputs: readonly OutputSpec[],
  ): BuiltOperand[] {
    const shapes = inferShapes(type, inputs, outputs);
    const built = outputs.map((o, i) =>
      this.builder.temporary(o.type, o.dims ?? shapes[i], o.quant)
    );
    // The driver's own validation, so a rule's mistake is a refusal naming the node here
    // rather than a model the server rejects.
    operationDefinition(type)!.validate({
      type,
      inputs: inputs.map(declared),
      outputs: built.map(declared),
    });
    this.builder.operation(type, inputs, built);
    return built;
  }

  /** Emits a one-output operation and names its result `name`. */
  emitAs(
    name: string,
    type: OperationType,
    inputs: readonly BuiltOperand[],
    output: OutputSpec,
  ): BuiltOperand {
    const [result] = this.emit(type, inputs, [output]);
    this.setOperand(name, result, output.elementType);
    return result;
  }
}

/** An operand as the driver's validation sees it. */
function declared(o: BuiltOperand): DeclaredOperand {
  return {
    index: o.index,
    type: o.type,
    dimensions: o.dimensions,
    scale: o.scale,
    zeroPoint: o.zeroPoint,
    lifetime: o.lifetime,
    ...(o.channelQuant ? { channelQuant: o.channelQuant } : {}),
    ...(o.value === undefined ? {} : { value: o.value }),
  };
}
