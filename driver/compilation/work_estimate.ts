/** How much work one execution of a plan is: decides where the driver runs it. */
import { typedView } from "../../nnapi/tensor.ts";
import { CONTROL_FLOW_OPERATIONS } from "../../operations/common/control_flow.ts";
import { operationWork } from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { PlanWithoutWeights, PreparedOperand } from "./plan.ts";

/** Estimates already made, per plan object (a live compilation keeps its plan). */
const estimates = new WeakMap<PlanWithoutWeights, number | undefined>();

/**
 * Estimated work of one execution, in multiply-adds or comparable element operations: the
 * sum of each step's operation `cost` (taps of windows, MACs of matrix products, element
 * counts by default) on the plan's shapes. Undefined when shapes are known only at
 * execution (no arena) or the plan has IF or WHILE steps: such a plan has no bound (a
 * loop runs until its condition says stop). The driver runs only plans of small work
 * on its own thread. Computed from the plan itself, so a plan from the compilation cache
 * never brings an estimate of an older driver.
 */
export function estimateWork(
  plan: PlanWithoutWeights & { weights?: SharedArrayBuffer },
): number | undefined {
  if (estimates.has(plan)) return estimates.get(plan);
  let work: number | undefined;
  const controlFlow = plan.steps.some((step) => CONTROL_FLOW_OPERATIONS.has(step.type));
  if (plan.arena && !controlFlow) {
    const value = (operand: PreparedOperand) => {
      if (operand.lifetime === "NO_VALUE") return null;
      const ref = operand.constant;
      if (ref?.buffer === "small") {
        return typedView(ref.type, plan.smallConstants, ref.offset, ref.length);
      }
      if (ref && plan.weights) return typedView(ref.type, plan.weights, ref.offset, ref.length);
      return undefined;
    };
    work = 0;
    for (const step of plan.steps) {
      const definition = operationDefinition(step.type);
      if (!definition) {
        work = undefined;
        break;
      }
      const inputs = step.inputs.map((i) => ({
        ...plan.operands[i],
        value: value(plan.operands[i]),
      }));
      const outputs = step.outputs.map((i) => plan.operands[i]);
      work += operationWork(definition, inputs, outputs);
    }
  }
  estimates.set(plan, work);
  return work;
}
