/** REDUCE_MAX: the maximum over a set of axes (quant8 compares raw values: the output keeps the input quantization). */
import { reduceOperation, typeLowest } from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** REDUCE_MAX (HAL 1.2). */
export const reduceMax: OperationDefinition<"REDUCE_MAX"> = withSignedQuant8(reduceOperation({
  type: "REDUCE_MAX",
  versions: { TENSOR_FLOAT32: "V1_2", TENSOR_FLOAT16: "V1_2", TENSOR_QUANT8_ASYMM: "V1_2" },
  init: typeLowest,
  fold: "max",
}));
