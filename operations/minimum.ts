/** MINIMUM: the elementwise minimum of two tensors with numpy-style broadcasting (V1_2). */
import { minMaxOperation } from "./common/min_max.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** MINIMUM; quant8 inputs are requantized to the output's quantization first. */
export const minimum: OperationDefinition<"MINIMUM"> = withSignedQuant8(
  minMaxOperation("MINIMUM", true),
);
