/**
 * L2_POOL_2D: sqrt of the mean of squares over each (clipped) window of an NHWC (or,
 * HAL 1.2, NCHW) input, with a fused activation. Forms: 10 inputs (explicit padding) or 7
 * (implicit SAME/VALID), plus the NCHW flag for 11/8 (HAL 1.2). Types: float32, float16
 * (HAL 1.2); no quantized form.
 */
import { l2PoolFloat } from "../kernels/pool_2d.ts";
import { poolOperation } from "./common/pooling.ts";
import type { OperationDefinition } from "./operation.ts";

/** L2_POOL_2D definition. */
export const l2Pool2d: OperationDefinition<"L2_POOL_2D"> = poolOperation("L2_POOL_2D", {
  inputTypes: ["TENSOR_FLOAT32", "TENSOR_FLOAT16"],
  kernel: () => l2PoolFloat,
});
