/**
 * Which steps of a gpu subgraph run as one dispatch. Two fusions, both bit-exact to the
 * steps run one by one, both only where the intermediate tensor is read by the next step
 * alone and not `needed` outside the subgraph (so it need not exist at all):
 * - a RELU, RELU1 or RELU6 right after a CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED
 *   whose fused activation is NONE is folded into that kernel's output clamp, which then
 *   clamps as the RELU step does (NaN to its lower bound, unlike a fused activation);
 * - consecutive element-wise steps of one output shape become one chain computed per
 *   element (`elementwiseChainDispatch`), each step's expression unchanged.
 * Deciding is separate from building, so tests can see what was fused.
 */
import { sameShape } from "../../../nnapi/tensor.ts";
import type { PrepareInput } from "../../../operations/operation.ts";
import { gpuKernel } from "./kernels/mod.ts";
import {
  type ElementwiseLink,
  elementwiseLink,
  isElementwise,
  isReluType,
  UNARY_BOUNDS,
} from "./kernels/elementwise.ts";
import type { GpuOperand, GpuStep } from "./subgraph.ts";

/** Steps (indexes into the subgraph's steps) that run as one unit. */
export type GpuUnit =
  | { kind: "step"; step: number }
  /** `step`'s kernel with the RELU-family step `relu`, of `bounds`, as its output clamp. */
  | { kind: "folded"; step: number; relu: number; bounds: readonly [number, number] }
  /** Two or more element-wise steps, each reading the one before. */
  | { kind: "chain"; steps: readonly number[] };

/** A step's inputs as kernel builders take them. */
export function prepareInputs(step: GpuStep, operands: readonly GpuOperand[]): PrepareInput[] {
  return step.inputs.map((i) => ({ ...operands[i], value: operands[i].value }));
}

/**
 * Groups `steps` (in execution order, each supported on the gpu) into units, in order;
 * every step is in exactly one.
 */
export function planUnits(
  steps: readonly GpuStep[],
  operands: readonly GpuOperand[],
  needed: ReadonlySet<number>,
): GpuUnit[] {
  const readers = new Map<number, Set<number>>();
  steps.forEach((step, s) => {
    for (const index of step.inputs) {
      if (!readers.has(index)) readers.set(index, new Set());
      readers.get(index)!.add(s);
    }
  });
  /** The output of step s when step s + 1 alone reads it and nothing outside needs it. */
  const handedOn = (s: number): number | undefined => {
    const step = steps[s];
    const next = steps[s + 1];
    if (!next || step.outputs.length !== 1) return undefined;
    const output = step.outputs[0];
    const readBy = readers.get(output);
    if (needed.has(output) || readBy?.size !== 1 || !readBy.has(s + 1)) return undefined;
    return output;
  };
  /** The bounds of the RELU step s + 1 when it folds into step s. */
  const foldedBounds = (s: number): readonly [number, number] | undefined => {
    const fusedActivation = gpuKernel(steps[s].type)?.fusedActivation;
    const next = steps[s + 1];
    if (!fusedActivation || handedOn(s) === undefined || !isReluType(next.type)) return;
    if (fusedActivation(prepareInputs(steps[s], operands)) !== 0) return;
    return UNARY_BOUNDS[next.type];
  };
  const chainsOn = (s: number): boolean => {
    const next = steps[s + 1];
    return isElementwise(steps[s].type) && handedOn(s) !== undefined &&
      isElementwise(next.type) &&
      sameShape(operands[steps[s].outputs[0]].shape, operands[next.outputs[0]].shape);
  };
  const units: GpuUnit[] = [];
  for (let s = 0; s < steps.length;) {
    const bounds = foldedBounds(s);
    if (bounds) {
      units.push({ kind: "folded", step: s, relu: s + 1, bounds });
      s += 2;
      continue;
    }
    let end = s + 1;
    while (end < steps.length && chainsOn(end - 1)) end++;
    if (end - s >= 2) {
      units.push({ kind: "chain", steps: Array.from({ length: end - s }, (_, k) => s + k) });
    } else {
      units.push({ kind: "step", step: s });
    }
    s = end;
  }
  return units;
}

/**
 * The links of a chain unit and the operands it reads (in first-read order: the chain's
 * bindings), each intermediate taken from the link before.
 */
export function chainLinks(
  chain: readonly GpuStep[],
  operands: readonly GpuOperand[],
): { links: ElementwiseLink[]; reads: number[] } {
  const reads: number[] = [];
  const links = chain.map((step, n) => {
    const previous = n > 0 ? chain[n - 1].outputs[0] : undefined;
    if (!isElementwise(step.type)) throw new Error(`${step.type} is not element-wise`);
    const tensors = step.inputs.filter((index) => operands[index].type === "TENSOR_FLOAT32");
    const refs = tensors.map((index) => {
      if (index === previous) return "previous" as const;
      if (!reads.includes(index)) reads.push(index);
      return reads.indexOf(index);
    });
    return elementwiseLink(step.type, prepareInputs(step, operands), refs);
  });
  return { links, reads };
}
