/** POW: base ^ exponent elementwise with numpy-style broadcasting (float only, V1_2). */
import { powFloat32 } from "../kernels/elementwise_broadcast.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import { prepareBroadcastPair, validateBroadcastPair } from "./common/broadcast_pair.ts";
import type { OperationDefinition } from "./operation.ts";

/** POW; float16 runs the float32 kernel on copies, as NNAPI computes `std::pow` in float. */
export const pow: OperationDefinition<"POW"> = {
  type: "POW",
  validate: (signature) =>
    validateBroadcastPair(signature, { types: { TENSOR_FLOAT32: "V1_2", TENSOR_FLOAT16: "V1_2" } }),
  prepare: prepareBroadcastPair,
  execute(inputs, outputs) {
    const [base, exponent] = inputs;
    const output = outputs[0];
    if (output.data!.length === 0) return;
    withFloat32Outputs([output.data as FloatData], ([out]) => {
      powFloat32(
        toFloat32(base.data as FloatData),
        base.shape,
        toFloat32(exponent.data as FloatData),
        exponent.shape,
        out,
        output.shape,
      );
    });
  },
};
