/**
 * Forward shape inference over a graph's steps in run order: each operation's `prepare`
 * computes its output shapes from its inputs' shapes and constant values. The model uses it
 * to resolve what registration can know, the partitioner to cost extents given only at
 * execution with representative ones, and executors to plan a run for the input shapes an
 * execution brings (`execution/shape_bindings.ts`).
 */
import {
  allocate,
  type ChannelQuant,
  elementCount,
  type TensorData,
  type TensorInfo,
} from "../../nnapi/tensor.ts";
import { CONTROL_FLOW_OPERATIONS } from "../../operations/common/control_flow.ts";
import type { Lifetime, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  checkDeclaredShape,
  checkTensorSize,
  type OperationDefinition,
  OperationError,
  operationFault,
  type PrepareInput,
  ValueNotYetKnown,
} from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { Model } from "./model.ts";

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

/** Outputs of at most this many elements are worked out during inference (shape arithmetic). */
const MAX_VALUE_ELEMENTS = 64;
/**
 * The types of the values inference works out: shapes, indexes, their comparisons, and the
 * float32 halves an int32 shape travels through where NNAPI moves no int32 (CONCATENATION).
 */
const VALUE_TYPES: ReadonlySet<OperandType> = new Set<OperandType>([
  "INT32",
  "TENSOR_INT32",
  "BOOL",
  "TENSOR_BOOL8",
  "FLOAT32",
  "TENSOR_FLOAT32",
]);

/**
 * Infers the output shapes of `steps` from `known` (per operand: a full shape, or undefined
 * where unknown). Small integer outputs whose inputs' values are known, or that read only
 * shapes (SHAPE, RANK), are worked out as it goes (running the reference kernel), so shapes
 * computed from extents — a RESHAPE target built from a SHAPE — resolve too. A step whose
 * inputs are not all known, that has no definition, or whose shapes depend on a value known
 * only at execution leaves its outputs unknown. A shape an operation rejects, one that
 * contradicts its declaration or one over the tensor size limit throws the operation's
 * INVALID_ARGUMENT fault.
 */
export function inferShapes(
  operands: readonly InferenceOperand[],
  steps: readonly InferenceStep[],
  known: readonly (readonly number[] | undefined)[],
): InferredShapes {
  const shapes = [...known];
  const values = operands.map((o) => o.value);
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
      value: values[i],
    }));
    const outputs = step.outputs.map((i) => ({ ...operands[i], shape: operands[i].declared }));
    try {
      const inferred = stepOutputShapes(definition, inputs, { outputs, indexes: step.outputs });
      step.outputs.forEach((out, j) => shapes[out] = inferred[j]);
      workOutValues(step, { definition, inputs, shapes: inferred, operands, values });
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
 * One step's output shapes from its inputs (shapes, and values where known), each checked
 * against its declared shape (`outputs[j].shape`) and the tensor size limit. Throws the
 * operation's OperationError, or ValueNotYetKnown when a value it needs is not known.
 */
export function stepOutputShapes(
  definition: OperationDefinition,
  inputs: readonly PrepareInput[],
  declared: { outputs: readonly TensorInfo[]; indexes: readonly number[] },
): number[][] {
  const shapes = definition.prepare(inputs, declared.outputs);
  declared.outputs.forEach((output, j) => {
    const what = `output ${j} (operand ${declared.indexes[j]})`;
    checkDeclaredShape(output.shape, shapes[j], what);
    checkTensorSize(output.type, shapes[j], what);
  });
  return shapes;
}

/**
 * Runs a step's reference kernel on known values when its outputs are small integer tensors
 * (see {@link inferShapes}), recording them in `values`; leaves them unknown otherwise.
 */
function workOutValues(
  step: InferenceStep,
  context: {
    definition: OperationDefinition;
    inputs: readonly PrepareInput[];
    shapes: readonly number[][];
    operands: readonly InferenceOperand[];
    values: (TensorData | null | undefined)[];
  },
): void {
  const { definition, inputs, shapes, operands, values } = context;
  if (CONTROL_FLOW_OPERATIONS.has(step.type)) return;
  const small = step.outputs.every((out, j) =>
    VALUE_TYPES.has(operands[out].type) && elementCount(shapes[j]) <= MAX_VALUE_ELEMENTS
  );
  const known = definition.readsOnlyShapes || inputs.every((input) => input.value !== undefined);
  if (!small || !known) return;
  const outputs = step.outputs.map((out, j) => ({
    ...operands[out],
    shape: shapes[j],
    data: allocate(operands[out].type, elementCount(shapes[j])),
  }));
  try {
    definition.execute(inputs.map((input) => ({ ...input, data: input.value ?? null })), outputs);
  } catch {
    // Values are a shortcut, never a verdict: the run computes (and reports) them itself.
    return;
  }
  step.outputs.forEach((out, j) => values[out] = outputs[j].data);
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
 * The extents tried, in order, for those known only at execution (other than a batch) until
 * the model takes them: a model whose convolutions need more than 64 samples of audio (a
 * first kernel of 127 at stride 64, Moonshine's) fails at 64 and takes 1024.
 */
const REPRESENTATIVE_EXTENTS = [REPRESENTATIVE_EXTENT, 256, 1024] as const;

/** A larger candidate is not tried once a model input would hold more elements than this. */
const MAX_REPRESENTATIVE_ELEMENTS = 1 << 20;

/**
 * A model input's declared extents with those known only at execution given representative
 * values: the first (a batch) 1, the others `extent`.
 */
function representativeInputShape(
  dimensions: readonly number[],
  extent: number = REPRESENTATIVE_EXTENT,
): number[] {
  return dimensions.map((d, j) => d || (j === 0 ? 1 : extent));
}

/**
 * What `fits` answers for the model inputs' representative shapes at the first of
 * {@link REPRESENTATIVE_EXTENTS} it answers for (undefined: the model does not take them);
 * undefined when it takes none. Larger extents are tried only where an input has an extent
 * known only at execution, and while every input stays within a bounded size.
 */
export function fittingRepresentativeShapes<T>(
  inputs: readonly (readonly number[])[],
  fits: (shapes: number[][]) => T | undefined,
): T | undefined {
  const open = inputs.some((dimensions) => dimensions.slice(1).includes(0));
  for (const [k, extent] of REPRESENTATIVE_EXTENTS.entries()) {
    if (k > 0 && !open) break;
    const shapes = inputs.map((dimensions) => representativeInputShape(dimensions, extent));
    if (k > 0 && shapes.some((shape) => elementCount(shape) > MAX_REPRESENTATIVE_ELEMENTS)) break;
    const fit = fits(shapes);
    if (fit !== undefined) return fit;
  }
  return undefined;
}

/** A model's operations in run order, as representative shapes are inferred over them. */
export function shapedGraph(model: Model): ShapedGraph {
  return {
    ...model,
    steps: model.runOrder.map((k) => ({ operation: k, ...model.operations[k] })),
  };
}

/**
 * The model inputs' representative shapes (`fittingRepresentativeShapes`) and every
 * operand's shape carried through the graph from them; undefined where inference fails at
 * every candidate (shapes that depend on values, or extents the model takes at none).
 */
function inferRepresentative(
  graph: ShapedGraph,
): { inputs: number[][]; shapes: (readonly number[] | undefined)[] } | undefined {
  const operands = graph.operands.map((o) => ({
    ...o,
    declared: o.dimensions,
    value: o.lifetime === "NO_VALUE" ? null : o.value,
  }));
  const declared = graph.inputIndexes.map((i) => graph.operands[i].dimensions);
  return fittingRepresentativeShapes(declared, (inputs) => {
    const known: (readonly number[] | undefined)[] = graph.operands.map((o) =>
      o.lifetime === "TEMPORARY_VARIABLE" || o.lifetime === "MODEL_OUTPUT"
        ? undefined
        : o.dimensions
    );
    graph.inputIndexes.forEach((i, k) => known[i] = inputs[k]);
    try {
      return { inputs, shapes: inferShapes(operands, graph.steps, known).shapes };
    } catch {
      return undefined;
    }
  });
}

/**
 * Every operand's shape with the extents known only at execution given representative
 * values (`fittingRepresentativeShapes`) and carried through the graph; where that fails,
 * the declared shape with unknown extents as 1. For costing only.
 */
export function representativeShapes(graph: ShapedGraph): (readonly number[])[] {
  const inferred = inferRepresentative(graph)?.shapes;
  return graph.operands.map((o, i) => inferred?.[i] ?? o.dimensions.map((d) => d || 1));
}

/**
 * The model inputs' shapes with the extents known only at execution given the first
 * representative values the model takes (`fittingRepresentativeShapes`), or
 * {@link REPRESENTATIVE_EXTENT} where inference cannot tell.
 */
export function representativeInputs(graph: ShapedGraph): number[][] {
  return inferRepresentative(graph)?.inputs ??
    graph.inputIndexes.map((i) => representativeInputShape(graph.operands[i].dimensions));
}
