/** SPACE_TO_DEPTH: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of SPACE_TO_DEPTH. */
export const spaceToDepth: OperationDefinition = {
  type: "SPACE_TO_DEPTH",
  validate() {
    throw new OperationError("SPACE_TO_DEPTH is not implemented yet");
  },
  prepare() {
    throw new OperationError("SPACE_TO_DEPTH is not implemented yet");
  },
  execute() {
    throw new OperationError("SPACE_TO_DEPTH is not implemented yet");
  },
};
