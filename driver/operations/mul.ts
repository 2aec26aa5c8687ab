/** MUL: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of MUL. */
export const mul: OperationDefinition = {
  type: "MUL",
  validate() {
    throw new OperationError("MUL is not implemented yet");
  },
  prepare() {
    throw new OperationError("MUL is not implemented yet");
  },
  execute() {
    throw new OperationError("MUL is not implemented yet");
  },
};
