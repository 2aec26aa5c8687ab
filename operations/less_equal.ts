/** LESS_EQUAL: elementwise comparison with numpy-style broadcasting, a TENSOR_BOOL8 output (V1_2). */
import { comparisonOperation } from "./common/comparison.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** LESS_EQUAL; quant8 inputs are compared as real values. */
export const lessEqual: OperationDefinition<"LESS_EQUAL"> = withSignedQuant8(
  comparisonOperation("LESS_EQUAL", "le"),
);
