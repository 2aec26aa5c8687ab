/**
 * Element-wise chains on `cpu-simd`: consecutive float32 ADD, SUB, MUL, DIV, MINIMUM,
 * MAXIMUM and HARD_SWISH steps of one output shape, each taking the previous one's result
 * (which nothing else reads), run as one pass (`kernels/f32_elementwise_chain.ts`),
 * bit for bit the steps run one by one. Which runs are fused is decided at preparation
 * (`driver/compilation/chain_fusion.ts`); shapes other than the planned ones run the steps one by one on
 * their reference kernels.
 */
import {
  CHAINED,
  type ChainOperation,
  elementwiseChainSimd,
} from "../../../kernels/f32_elementwise_chain.ts";
import type { ArithmeticOp } from "../../../kernels/f32_elementwise_codegen.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import { sameShape, type Tensor } from "../../../nnapi/tensor.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import { add } from "../../../operations/add.ts";
import { div } from "../../../operations/div.ts";
import { hardSwish } from "../../../operations/hard_swish.ts";
import { maximum } from "../../../operations/maximum.ts";
import { minimum } from "../../../operations/minimum.ts";
import { mul } from "../../../operations/mul.ts";
import type { Kernel, OperationDefinition } from "../../../operations/operation.ts";
import { sub } from "../../../operations/sub.ts";
import type { ChainFusion, ChainLink } from "../device.ts";
import { forms, staticFloat } from "./elementwise.ts";

/** The chained operations: their kernel operation and their reference definition. */
const CHAINABLE: Partial<
  Record<OperationType, { op: ArithmeticOp | "hard_swish"; reference: OperationDefinition }>
> = {
  ADD: { op: "add", reference: add },
  SUB: { op: "sub", reference: sub },
  MUL: { op: "mul", reference: mul },
  DIV: { op: "div", reference: div },
  MINIMUM: { op: "min", reference: minimum },
  MAXIMUM: { op: "max", reference: maximum },
  HARD_SWISH: { op: "hard_swish", reference: hardSwish },
};

/** A link as the chain kernel reads it: its operation, operand forms and clamp. */
interface LinkPlan {
  op: ArithmeticOp | "hard_swish";
  reference: OperationDefinition;
  /** Tensor inputs (1 or 2) and their forms. */
  forms: ("tensor" | "scalar" | "row")[];
  min: number;
  max: number;
}

/** How the chain kernel runs `link`, or undefined when it cannot. */
function planLink(link: ChainLink, outShape: readonly number[]): LinkPlan | undefined {
  const entry = CHAINABLE[link.type];
  const step = link.operands;
  if (!entry || !sameShape(step.outputs[0].shape, outShape)) return undefined;
  if (entry.op === "hard_swish") {
    if (!staticFloat(step, 1)) return undefined;
    return { ...entry, forms: ["tensor"], min: -Infinity, max: Infinity };
  }
  const pair = staticFloat(step, 2) ? forms(step) : undefined;
  if (!pair || (link.chained !== undefined && pair[link.chained] !== "tensor")) return undefined;
  let clamp = { min: -Infinity, max: Infinity };
  if (link.type !== "MINIMUM" && link.type !== "MAXIMUM") {
    const code = step.inputs[2].value;
    if (code == null) return undefined;
    clamp = activationRangeFloat(Number(code[0]));
  }
  return { ...entry, forms: pair, ...clamp };
}

/** The plans of the leading links the chain kernel runs together. */
function plans(links: readonly ChainLink[]): LinkPlan[] {
  const outShape = links[0].operands.outputs[0].shape;
  const planned: LinkPlan[] = [];
  for (const link of links) {
    const plan = planLink(link, outShape);
    // The loop reads rows in whole vectors.
    const rows = link.operands.inputs.filter((_, i) => plan?.forms[i] === "row");
    if (!plan || rows.some((t) => rowLength(t.shape) % 4 !== 0)) break;
    planned.push(plan);
  }
  return planned;
}

/** Elements of a row operand (its shape without leading ones). */
function rowLength(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Runs the links one by one on their reference kernels (the intermediates are inputs). */
function oneByOne(
  links: readonly ChainLink[],
  linkPlans: readonly LinkPlan[],
  inputs: readonly Tensor[][],
  output: Tensor,
): void {
  linkPlans.forEach((plan, k) => {
    const next = k + 1 < links.length ? inputs[k + 1][links[k + 1].chained!] : output;
    plan.reference.execute(inputs[k], [next]);
  });
}

/** `cpu-simd`'s element-wise chains. */
export const elementwiseChains: ChainFusion = {
  fusable(links) {
    const count = plans(links).length;
    return count >= 2 ? count : 0;
  },
  bind(links) {
    const linkPlans = plans(links);
    if (linkPlans.length !== links.length || links.length < 2) return undefined;
    const counts = links.map((l) => l.operands.inputs.length);
    const plannedShapes = links.map((l) => l.operands.inputs.map((t) => t.shape));
    const outShape = links[0].operands.outputs[0].shape;
    const kernel: Kernel = (inputs, outputs) => {
      const perLink: Tensor[][] = [];
      let at = 0;
      for (const count of counts) {
        perLink.push(inputs.slice(at, at + count));
        at += count;
      }
      const output = outputs[0];
      const fits = sameShape(output.shape, outShape) && output.data instanceof Float32Array &&
        linkPlans.every((plan, k) =>
          plan.forms.every((_, i) =>
            sameShape(perLink[k][i].shape, plannedShapes[k][i]) &&
            perLink[k][i].data instanceof Float32Array
          )
        );
      const chain: ChainOperation[] = linkPlans.map((plan, k) => ({
        op: plan.op,
        operands: plan.forms.map((form, i) =>
          i === links[k].chained ? CHAINED : { data: perLink[k][i].data as Float32Array, form }
        ),
        min: plan.min,
        max: plan.max,
      }));
      if (!fits || !elementwiseChainSimd(chain, output.data as Float32Array)) {
        oneByOne(links, linkPlans, perLink, output);
      }
    };
    return kernel;
  },
};
