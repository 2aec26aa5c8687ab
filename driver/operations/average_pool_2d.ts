/** AVERAGE_POOL_2D: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of AVERAGE_POOL_2D. */
export const averagePool2d: OperationDefinition = {
  type: "AVERAGE_POOL_2D",
  validate() {
    throw new OperationError("AVERAGE_POOL_2D is not implemented yet");
  },
  prepare() {
    throw new OperationError("AVERAGE_POOL_2D is not implemented yet");
  },
  execute() {
    throw new OperationError("AVERAGE_POOL_2D is not implemented yet");
  },
};
