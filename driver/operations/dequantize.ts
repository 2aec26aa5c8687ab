/** DEQUANTIZE: placeholder until its module lands (reports itself unsupported). */
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";

/** Placeholder definition of DEQUANTIZE. */
export const dequantize: OperationDefinition = {
  type: "DEQUANTIZE",
  validate() {
    throw new OperationError("DEQUANTIZE is not implemented yet");
  },
  prepare() {
    throw new OperationError("DEQUANTIZE is not implemented yet");
  },
  execute() {
    throw new OperationError("DEQUANTIZE is not implemented yet");
  },
};
