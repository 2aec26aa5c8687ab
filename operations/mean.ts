/**
 * MEAN: the average over a set of axes. Float16 runs the float32 kernel on copies; quant8
 * averages the raw values with integer arithmetic, as NNAPI does (the output keeps the
 * input's quantization).
 */
import { meanFloat32, meanQuant8 } from "../kernels/reduction_kernels.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import {
  executionPlan,
  prepareReduction,
  REDUCTION,
  validateReduction,
} from "./common/reduction.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** MEAN (HAL 1.1; float16 in 1.2); keep-dims is an INT32 (> 0 keeps). */
export const mean: OperationDefinition<"MEAN"> = withSignedQuant8({
  type: "MEAN",
  validate: (signature) =>
    validateReduction(signature, {
      TENSOR_FLOAT32: "V1_1",
      TENSOR_QUANT8_ASYMM: "V1_1",
      TENSOR_FLOAT16: "V1_2",
    }, "INT32"),
  prepare: prepareReduction,
  execute(inputs, outputs) {
    const input = inputs[REDUCTION.input];
    const output = outputs[0];
    const plan = executionPlan(inputs);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      meanQuant8(input.data as Uint8Array, plan, output.data as Uint8Array);
      return;
    }
    withFloat32Outputs([output.data as FloatData], ([result]) => {
      meanFloat32(toFloat32(input.data as FloatData), plan, result);
    });
  },
});
