/** LESS: elementwise comparison with numpy-style broadcasting, a TENSOR_BOOL8 output (V1_2). */
import { comparisonOperation } from "./common/comparison.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** LESS; quant8 inputs are compared as real values. */
export const less: OperationDefinition<"LESS"> = withSignedQuant8(
  comparisonOperation("LESS", "lt"),
);
