/** GREATER: elementwise comparison with numpy-style broadcasting, a TENSOR_BOOL8 output (V1_2). */
import { comparisonOperation } from "./common/comparison.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** GREATER; quant8 inputs are compared as real values. */
export const greater: OperationDefinition<"GREATER"> = withSignedQuant8(
  comparisonOperation("GREATER", "gt"),
);
