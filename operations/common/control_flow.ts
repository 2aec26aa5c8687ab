/**
 * What IF and WHILE share: the subgraph a SUBGRAPH input names, NNAPI's `compatible` rule
 * between an operand of the operation and the subgraph operand it binds to, the condition
 * operand's form, and shape inference that knows an output only when it is declared (the
 * branch or loop that produces it runs only at execution).
 */
import {
  elementCount,
  isFullySpecified,
  isScalarType,
  type TensorInfo,
} from "../../nnapi/tensor.ts";
import type { OperationType } from "../../nnapi/types.ts";
import {
  check,
  type DeclaredOperand,
  type Kernel,
  type OperationSignature,
  type SubgraphSignature,
  ValueNotYetKnown,
} from "../operation.ts";

/** The operation types that reference subgraphs and run in the executable's control flow. */
export const CONTROL_FLOW_OPERATIONS: ReadonlySet<OperationType> = new Set(["IF", "WHILE"]);

/** The index of the referenced subgraph a SUBGRAPH operand's value names. */
export function subgraphIndex(value: ArrayLike<number | bigint> | null | undefined): number {
  return Number(value?.[0] ?? -1);
}

/** A referenced subgraph with the index it has in the model. */
export interface NamedSubgraph extends SubgraphSignature {
  index: number;
}

/** The subgraph that input `position` (a SUBGRAPH operand) names; `what` says its role. */
export function referencedSubgraph(
  signature: OperationSignature,
  position: number,
  what: string,
): NamedSubgraph {
  const operand = signature.inputs[position];
  check(
    operand.type === "SUBGRAPH",
    `${what} (input ${position}, operand ${operand.index}) must be a SUBGRAPH operand, got ${operand.type}`,
  );
  const index = subgraphIndex(operand.value);
  const subgraph = signature.referenced?.[index];
  check(subgraph !== undefined, `${what} (input ${position}) names no referenced subgraph`);
  return { index, ...subgraph };
}

function describe(operand: DeclaredOperand): string {
  return `${operand.type} [${operand.dimensions.join(",")}]` +
    (operand.scale !== 0 || operand.zeroPoint !== 0
      ? ` scale ${operand.scale} zeroPoint ${operand.zeroPoint}`
      : "");
}

/**
 * NNAPI's `compatible`: the same type, scale, zero point and per-channel parameters, and,
 * where both declare a rank, the same rank and equal extents where both are known.
 */
export function checkCompatible(a: DeclaredOperand, b: DeclaredOperand, what: string): void {
  const sameChannels = JSON.stringify(a.channelQuant ?? null) ===
    JSON.stringify(b.channelQuant ?? null);
  const bothRanked = a.dimensions.length > 0 && b.dimensions.length > 0;
  const sameShape = !bothRanked ||
    (a.dimensions.length === b.dimensions.length &&
      a.dimensions.every((d, i) => d === 0 || b.dimensions[i] === 0 || d === b.dimensions[i]));
  check(
    a.type === b.type && a.scale === b.scale && a.zeroPoint === b.zeroPoint && sameChannels &&
      sameShape,
    `${what}: operand ${a.index} (${describe(a)}) does not match operand ${b.index} (${
      describe(b)
    })`,
  );
}

/** A condition operand: TENSOR_BOOL8 of shape [1], fully specified. */
export function checkCondition(operand: DeclaredOperand, what: string): void {
  check(
    operand.type === "TENSOR_BOOL8" && operand.dimensions.length === 1 &&
      operand.dimensions[0] === 1,
    `${what} (operand ${operand.index}) must be TENSOR_BOOL8 of shape [1], got ${
      describe(operand)
    }`,
  );
}

/** Whether a declared shape is known: a scalar, or a tensor of known rank and extents. */
function isKnown(output: TensorInfo): boolean {
  return (isScalarType(output.type) || output.shape.length > 0) &&
    isFullySpecified(output.shape);
}

/**
 * Output shapes of a control-flow operation at preparation: the declared ones when every
 * output declares its full shape, else known only at execution.
 */
export function declaredOutputShapes(outputs: readonly TensorInfo[]): number[][] {
  if (!outputs.every(isKnown)) throw new ValueNotYetKnown();
  return outputs.map((o) => [...o.shape]);
}

/** Work of one step at preparation: the elements it hands over (its subgraphs run apart). */
export function handOverWork(outputs: readonly TensorInfo[]): number {
  return outputs.reduce((n, o) => n + elementCount(o.shape.map((d) => d || 1)), 0);
}

/**
 * The kernel slot of a control-flow operation: it runs subgraphs, which a kernel cannot see,
 * so the executable runs it (`driver/execution/control_flow/`) and never calls this.
 */
export function controlFlowKernel(type: OperationType): Kernel {
  return () => {
    throw new Error(`${type} runs in the executable's control flow, not as a kernel`);
  };
}
