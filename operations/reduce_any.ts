/** REDUCE_ANY: logical or over a set of axes. */
import { reduceOperation } from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";

/** REDUCE_ANY (HAL 1.2). */
export const reduceAny: OperationDefinition<"REDUCE_ANY"> = reduceOperation({
  type: "REDUCE_ANY",
  versions: { TENSOR_BOOL8: "V1_2" },
  init: () => 0,
  fold: "any",
});
