/** L2_POOL_2D: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of L2_POOL_2D. */
export const l2Pool2d: OperationDefinition = {
  type: "L2_POOL_2D",
  validate() {
    throw new OperationError("L2_POOL_2D is not implemented yet");
  },
  prepare() {
    throw new OperationError("L2_POOL_2D is not implemented yet");
  },
  execute() {
    throw new OperationError("L2_POOL_2D is not implemented yet");
  },
};
