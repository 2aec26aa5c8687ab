/** LOCAL_RESPONSE_NORMALIZATION: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of LOCAL_RESPONSE_NORMALIZATION. */
export const localResponseNormalization: OperationDefinition = {
  type: "LOCAL_RESPONSE_NORMALIZATION",
  validate() {
    throw new OperationError("LOCAL_RESPONSE_NORMALIZATION is not implemented yet");
  },
  prepare() {
    throw new OperationError("LOCAL_RESPONSE_NORMALIZATION is not implemented yet");
  },
  execute() {
    throw new OperationError("LOCAL_RESPONSE_NORMALIZATION is not implemented yet");
  },
};
