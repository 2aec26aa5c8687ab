/**
 * WHILE (HAL 1.3): runs a body subgraph while a condition subgraph outputs true. Its inputs
 * after the two subgraph references are m input-output values, k state-only values and n
 * input-only values; the body maps the m + k to their next values and the WHILE outputs the
 * final m (m = output count, k = body outputs - m, n = body inputs - m - k; NNAPI
 * validateWhileOperation). The loop runs at execution, in the executable's control flow
 * (`driver/execution/control_flow/`), under the execution's loop timeout.
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

/** Operand positions of WHILE. */
export const WHILE_INPUTS = { condition: 0, body: 1, firstInput: 2 } as const;

export const whileOperation: OperationDefinition<"WHILE"> = {
  type: "WHILE",
  validate(signature) {
    const { inputs, outputs } = signature;
    check(
      inputs.length >= 3,
      `expected at least 3 inputs (condition, body, initial values), got ${inputs.length}`,
    );
    check(outputs.length >= 1, "expected at least 1 output, got 0");
    const passed = inputs.slice(WHILE_INPUTS.firstInput);
    const condition = referencedSubgraph(signature, WHILE_INPUTS.condition, "the condition");
    const atCondition = `the condition (subgraph ${condition.index})`;
    check(
      condition.inputs.length === passed.length,
      `${atCondition} has ${condition.inputs.length} inputs; WHILE passes it ${passed.length}`,
    );
    check(
      condition.outputs.length === 1,
      `${atCondition} has ${condition.outputs.length} outputs; it must have exactly 1`,
    );
    condition.inputs.forEach((inner, j) =>
      checkCompatible(inner, passed[j], `${atCondition} input ${j} and WHILE input ${j + 2}`)
    );
    checkCondition(condition.outputs[0], `${atCondition} output 0`);

    const body = referencedSubgraph(signature, WHILE_INPUTS.body, "the body");
    const atBody = `the body (subgraph ${body.index})`;
    const m = outputs.length;
    check(
      body.inputs.length === passed.length,
      `${atBody} has ${body.inputs.length} inputs; WHILE passes it ${passed.length}`,
    );
    check(
      body.outputs.length >= m && body.outputs.length <= body.inputs.length,
      `${atBody} has ${body.outputs.length} outputs; it needs at least the WHILE's ${m} ` +
        `and at most its own ${body.inputs.length} inputs`,
    );
    body.inputs.forEach((inner, j) =>
      checkCompatible(inner, passed[j], `${atBody} input ${j} and WHILE input ${j + 2}`)
    );
    outputs.forEach((outer, j) =>
      checkCompatible(body.outputs[j], outer, `${atBody} output ${j} and WHILE output ${j}`)
    );
    body.outputs.forEach((output, j) =>
      checkCompatible(body.inputs[j], output, `${atBody} input ${j} and its output ${j}`)
    );
    return "V1_3";
  },
  prepare: (_inputs, outputs) => declaredOutputShapes(outputs),
  execute: controlFlowKernel("WHILE"),
  cost: (_inputs, outputs) => handOverWork(outputs),
};
