/** L2_NORMALIZATION: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of L2_NORMALIZATION. */
export const l2Normalization: OperationDefinition = {
  type: "L2_NORMALIZATION",
  validate() {
    throw new OperationError("L2_NORMALIZATION is not implemented yet");
  },
  prepare() {
    throw new OperationError("L2_NORMALIZATION is not implemented yet");
  },
  execute() {
    throw new OperationError("L2_NORMALIZATION is not implemented yet");
  },
};
