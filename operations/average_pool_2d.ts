/**
 * AVERAGE_POOL_2D: mean over each (clipped) window of an NHWC (or, HAL 1.2, NCHW) input,
 * with a fused activation. Forms: 10 inputs (explicit padding) or 7 (implicit SAME/VALID),
 * plus the NCHW flag for 11/8 (HAL 1.2). Types: float32, float16 (HAL 1.2), quant8 asymm
 * (output quantization = input quantization; integer mean rounded half up).
 */
import { averagePoolFloat, averagePoolQuantized } from "../kernels/pool_2d.ts";
import { poolOperation } from "./common/pooling.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** AVERAGE_POOL_2D definition. */
export const averagePool2d: OperationDefinition<"AVERAGE_POOL_2D"> = withSignedQuant8(poolOperation(
  "AVERAGE_POOL_2D",
  {
    inputTypes: ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"],
    kernel: (type) => type === "TENSOR_QUANT8_ASYMM" ? averagePoolQuantized : averagePoolFloat,
  },
));
