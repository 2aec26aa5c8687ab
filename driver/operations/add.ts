/** ADD: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of ADD. */
export const add: OperationDefinition = {
  type: "ADD",
  validate() {
    throw new OperationError("ADD is not implemented yet");
  },
  prepare() {
    throw new OperationError("ADD is not implemented yet");
  },
  execute() {
    throw new OperationError("ADD is not implemented yet");
  },
};
