/** DEPTH_TO_SPACE: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of DEPTH_TO_SPACE. */
export const depthToSpace: OperationDefinition = {
  type: "DEPTH_TO_SPACE",
  validate() {
    throw new OperationError("DEPTH_TO_SPACE is not implemented yet");
  },
  prepare() {
    throw new OperationError("DEPTH_TO_SPACE is not implemented yet");
  },
  execute() {
    throw new OperationError("DEPTH_TO_SPACE is not implemented yet");
  },
};
