/** REDUCE_ALL: logical and over a set of axes. */
import { reduceOperation } from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";

/** REDUCE_ALL (HAL 1.2). */
export const reduceAll: OperationDefinition<"REDUCE_ALL"> = reduceOperation({
  type: "REDUCE_ALL",
  versions: { TENSOR_BOOL8: "V1_2" },
  init: () => 1,
  fold: "all",
});
