/**
 * `cpu-reference`: every implemented operation on its reference kernel — plain typed-array
 * loops, the executable specification and the conformance oracle. Where an operation's
 * constant parameters can be computed once per compilation (quantized multipliers, lookup
 * tables), its `bindReference` does so; the results are bit-identical.
 */
import type { OperationDefinition } from "../../../operations/operation.ts";
import { implementedOperations, operationDefinition } from "../../../operations/table.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { StepImplementation, StepTable } from "../device.ts";
import { hostDevice } from "../host_device.ts";

/** Version of the reference device: part of every cache key that uses it. */
export const CPU_REFERENCE_VERSION = "0.2.0";

function referenceStep<T extends OperationType>(
  definition: OperationDefinition<T>,
): StepImplementation<T> {
  return {
    type: definition.type,
    supports: () => true,
    bind: (step) => definition.bindReference?.(step.inputs, step.outputs) ?? definition.execute,
  };
}

const STEPS = Object.fromEntries(
  implementedOperations().map((type) => [type, referenceStep(operationDefinition(type)!)]),
) as StepTable;

/** The reference CPU device. */
export const cpuReference = hostDevice({
  name: "cpu-reference",
  version: CPU_REFERENCE_VERSION,
  halVersion: "V1_3",
  steps: STEPS,
});
