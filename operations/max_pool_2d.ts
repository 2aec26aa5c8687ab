/**
 * MAX_POOL_2D: maximum over each (clipped) window of an NHWC (or, HAL 1.2, NCHW) input,
 * with a fused activation. Forms: 10 inputs (explicit padding) or 7 (implicit SAME/VALID),
 * plus the NCHW flag for 11/8 (HAL 1.2). Types: float32, float16 (HAL 1.2), quant8 asymm
 * (output quantization = input quantization).
 */
import { maxPool } from "../kernels/pool_2d.ts";
import { poolOperation } from "./common/pooling.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** MAX_POOL_2D definition. */
export const maxPool2d: OperationDefinition<"MAX_POOL_2D"> = withSignedQuant8(
  poolOperation("MAX_POOL_2D", {
    inputTypes: ["TENSOR_FLOAT32", "TENSOR_FLOAT16", "TENSOR_QUANT8_ASYMM"],
    kernel: () => maxPool,
  }),
);
