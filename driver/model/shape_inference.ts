/**
 * Forward shape inference over a graph's steps in run order: each operation's `prepare`
 * computes its output shapes from its inputs' shapes and constant values. The model uses it
 * to resolve what registration can know, the partitioner to cost extents given only at
 * execution with representative ones, and executors to plan a run for the input shapes an
 * execution brings (`execution/shape_bindings.ts`).
 */
import type { ChannelQuant, TensorData } from "../../nnapi/tensor.ts";
import type { Lifetime, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  checkDeclaredShape,
  checkTensorSize,
  OperationError,
  operationFault,
  type PrepareInput,
  ValueNotYetKnown,
} from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";

/** An operand as inference reads it: its declared shape (0: unknown extent) and value. */
export interface InferenceOperand {
  type: OperandType;
  scale: number;
  zeroPoint: number;
  channelQuant?: ChannelQuant;
  lifetime: Lifetime;
  /** The declared shape, which inferred shapes must fit. */
  declared: readonly number[];
  /** A constant's value; null for an omitted optional operand; undefined otherwise. */
  value: TensorData | null | undefined;
}

/** A step as inference reads it (its model operation index names it in faults). */
export interface InferenceStep {
  operation: number;
  type: OperationType;
  inputs: readonly number[];
  outputs: readonly number[];
}

/** What inference found. */
export interface InferredShapes {
  /** Per operand: its shape, or undefined where it stays unknown. */
  shapes: (readonly number[] | undefined)[];
  /** Whether every step's outputs were inferred. */
  resolved: boolean;
}

/**
 * Infers the output shapes of `steps` from `known` (per operand: a full shape, or undefined
 * where unknown). A step whose inputs are not all known, that has no definition, or whose
 * shapes depend on a value known only at execution leaves its outputs unknown. A shape an
 * operation rejects, one that contradicts its declaration or one over the tensor size limit
 * throws the operation's INVALID_ARGUMENT fault.
 */
export function inferShapes(
  operands: readonly InferenceOperand[],
  steps: readonly InferenceStep[],
  known: readonly (readonly number[] | undefined)[],
): InferredShapes {
  const shapes = [...known];
  let resolved = true;
  for (const step of steps) {
    const definition = operationDefinition(step.type);
    if (!definition || step.inputs.some((i) => shapes[i] === undefined)) {
      resolved = false;
      continue;
    }
    const inputs: PrepareInput[] = step.inputs.map((i) => ({
      ...operands[i],
      shape: shapes[i]!,
      value: operands[i].value,
    }));
    const outputs = step.outputs.map((i) => ({ ...operands[i], shape: operands[i].declared }));
    try {
      const inferred = definition.prepare(inputs, outputs);
      step.outputs.forEach((out, j) => {
        const what = `output ${j} (operand ${out})`;
        checkDeclaredShape(operands[out].declared, inferred[j], what);
        checkTensorSize(operands[out].type, inferred[j], what);
        shapes[out] = inferred[j];
      });
    } catch (error) {
      if (error instanceof ValueNotYetKnown) {
        resolved = false;
        continue;
      }
      if (error instanceof OperationError) {
        throw operationFault(step.operation, step.type, error.message);
      }
      throw error;
    }
  }
  return { shapes, resolved };
}

/**
 * What the partitioner costs an extent known only at execution as, before any execution
 * brings one: a batch extent (the first of a model input) as 1, any other as this.
 */
export const REPRESENTATIVE_EXTENT = 64;

/** A model's operands and steps as {@link representativeShapes} reads them. */
export interface ShapedGraph {
  operands: readonly {
    type: OperandType;
    dimensions: readonly number[];
    scale: number;
    zeroPoint: number;
    channelQuant?: ChannelQuant;
    lifetime: Lifetime;
    value?: TensorData;
  }[];
  inputIndexes: readonly number[];
  steps: readonly InferenceStep[];
}

/**
 * Every operand's shape with the extents known only at execution given representative
 * values (a model input's first extent 1, others {@link REPRESENTATIVE_EXTENT}) and carried
 * through the graph; where that fails (shapes that depend on values, or that these extents
 * do not fit), the declared shape with unknown extents as 1. For costing only.
 */
export function representativeShapes(graph: ShapedGraph): (readonly number[])[] {
  const declaredOr1 = (i: number) => graph.operands[i].dimensions.map((d) => d || 1);
  const known: (readonly number[] | undefined)[] = graph.operands.map((o) =>
    o.lifetime === "TEMPORARY_VARIABLE" || o.lifetime === "MODEL_OUTPUT" ? undefined : o.dimensions
  );
  for (const i of graph.inputIndexes) {
    known[i] = graph.operands[i].dimensions.map((d, j) =>
      d || (j === 0 ? 1 : REPRESENTATIVE_EXTENT)
    );
  }
  const operands = graph.operands.map((o) => ({
    ...o,
    declared: o.dimensions,
    value: o.lifetime === "NO_VALUE" ? null : o.value,
  }));
  try {
    const { shapes } = inferShapes(operands, graph.steps, known);
    return shapes.map((shape, i) => shape ?? declaredOr1(i));
  } catch {
    return graph.operands.map((_, i) => declaredOr1(i));
  }
}
