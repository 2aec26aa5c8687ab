/** RESIZE_BILINEAR: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of RESIZE_BILINEAR. */
export const resizeBilinear: OperationDefinition = {
  type: "RESIZE_BILINEAR",
  validate() {
    throw new OperationError("RESIZE_BILINEAR is not implemented yet");
  },
  prepare() {
    throw new OperationError("RESIZE_BILINEAR is not implemented yet");
  },
  execute() {
    throw new OperationError("RESIZE_BILINEAR is not implemented yet");
  },
};
