/** REDUCE_PROD: the product over a set of axes (float16 accumulates in float16). */
import { reduceOperation } from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";

/** REDUCE_PROD (HAL 1.2). */
export const reduceProd: OperationDefinition<"REDUCE_PROD"> = reduceOperation({
  type: "REDUCE_PROD",
  versions: { TENSOR_FLOAT32: "V1_2", TENSOR_FLOAT16: "V1_2" },
  init: () => 1,
  fold: "product",
});
