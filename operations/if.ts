/**
 * IF (HAL 1.3): runs one of two referenced subgraphs, chosen by a TENSOR_BOOL8 [1] condition,
 * on inputs 3.. and returns its outputs. Both branches must agree with the operation's
 * signature (NNAPI validateIfOperation). The branch runs at execution, in the executable's
 * control flow (`driver/execution/control_flow/`), so an output whose shape is not declared is known
 * only then.
 */
import { check, type OperationDefinition } from "./operation.ts";
import {
  checkCompatible,
  checkCondition,
  controlFlowKernel,
  declaredOutputShapes,
  handOverWork,
  referencedSubgraph,
} from "./common/control_flow.ts";

/** Operand positions of IF. */
export const IF_INPUTS = { condition: 0, thenBranch: 1, elseBranch: 2, firstInput: 3 } as const;

export const ifOperation: OperationDefinition<"IF"> = {
  type: "IF",
  validate(signature) {
    const { inputs, outputs } = signature;
    check(
      inputs.length >= 3,
      `expected at least 3 inputs (condition, then branch, else branch), got ${inputs.length}`,
    );
    check(outputs.length >= 1, "expected at least 1 output, got 0");
    checkCondition(inputs[IF_INPUTS.condition], "the condition (input 0)");
    const passed = inputs.slice(IF_INPUTS.firstInput);
    const branches = [
      [IF_INPUTS.thenBranch, "the then branch"],
      [IF_INPUTS.elseBranch, "the else branch"],
    ] as const;
    for (const [position, name] of branches) {
      const branch = referencedSubgraph(signature, position, name);
      const at = `${name} (subgraph ${branch.index})`;
      check(
        branch.inputs.length === passed.length,
        `${at} has ${branch.inputs.length} inputs; IF passes it ${passed.length}`,
      );
      check(
        branch.outputs.length === outputs.length,
        `${at} has ${branch.outputs.length} outputs; IF has ${outputs.length}`,
      );
      branch.inputs.forEach((inner, j) =>
        checkCompatible(inner, passed[j], `${at} input ${j} and IF input ${j + 3}`)
      );
      branch.outputs.forEach((inner, j) =>
        checkCompatible(inner, outputs[j], `${at} output ${j} and IF output ${j}`)
      );
    }
    return "V1_3";
  },
  prepare: (_inputs, outputs) => declaredOutputShapes(outputs),
  execute: controlFlowKernel("IF"),
  cost: (_inputs, outputs) => handOverWork(outputs),
};
