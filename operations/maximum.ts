/** MAXIMUM: the elementwise maximum of two tensors with numpy-style broadcasting (V1_2). */
import { minMaxOperation } from "./common/min_max.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** MAXIMUM; quant8 inputs are requantized to the output's quantization first. */
export const maximum: OperationDefinition<"MAXIMUM"> = withSignedQuant8(
  minMaxOperation("MAXIMUM", false),
);
