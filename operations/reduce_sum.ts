/** REDUCE_SUM: the sum over a set of axes (float16 accumulates in float16). */
import { reduceOperation } from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";

/** REDUCE_SUM (HAL 1.2). */
export const reduceSum: OperationDefinition<"REDUCE_SUM"> = reduceOperation({
  type: "REDUCE_SUM",
  versions: { TENSOR_FLOAT32: "V1_2", TENSOR_FLOAT16: "V1_2" },
  init: () => 0,
  fold: "sum",
});
