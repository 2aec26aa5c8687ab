/** REDUCE_MIN: the minimum over a set of axes (quant8 compares raw values: the output keeps the input quantization). */
import { reduceOperation, typeMax } from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** REDUCE_MIN (HAL 1.2). */
export const reduceMin: OperationDefinition<"REDUCE_MIN"> = withSignedQuant8(reduceOperation({
  type: "REDUCE_MIN",
  versions: { TENSOR_FLOAT32: "V1_2", TENSOR_FLOAT16: "V1_2", TENSOR_QUANT8_ASYMM: "V1_2" },
  init: typeMax,
  fold: "min",
}));
