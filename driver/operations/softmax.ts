/** SOFTMAX: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of SOFTMAX. */
export const softmax: OperationDefinition = {
  type: "SOFTMAX",
  validate() {
    throw new OperationError("SOFTMAX is not implemented yet");
  },
  prepare() {
    throw new OperationError("SOFTMAX is not implemented yet");
  },
  execute() {
    throw new OperationError("SOFTMAX is not implemented yet");
  },
};
