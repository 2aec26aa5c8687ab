/** PRELU: x >= 0 ? x : alpha * x, with alpha broadcast against the input (V1_2). */
import {
  preluFloat32,
  preluQuant8,
  type PreluQuant8Params,
  preluQuant8Params,
} from "../kernels/elementwise_broadcast.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import type { Tensor } from "../nnapi/tensor.ts";
import { prepareBroadcastPair, validateBroadcastPair } from "./common/broadcast_pair.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** Runs PRELU; `params` gives the quant8 multipliers when they are needed. */
function run(
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  params: () => PreluQuant8Params,
): void {
  const [input, alpha] = inputs;
  const output = outputs[0];
  if (output.data!.length === 0) return;
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    preluQuant8(
      input.data as Uint8Array,
      input.shape,
      alpha.data as Uint8Array,
      alpha.shape,
      output.data as Uint8Array,
      output.shape,
      params(),
    );
    return;
  }
  withFloat32Outputs([output.data as FloatData], ([out]) => {
    preluFloat32(
      toFloat32(input.data as FloatData),
      input.shape,
      toFloat32(alpha.data as FloatData),
      alpha.shape,
      out,
      output.shape,
    );
  });
}

/** PRELU; quant8 has one output multiplier for non-negative inputs and one for negative. */
export const prelu: OperationDefinition<"PRELU"> = withSignedQuant8({
  type: "PRELU",
  validate: (signature) =>
    validateBroadcastPair(signature, {
      types: { TENSOR_FLOAT32: "V1_2", TENSOR_FLOAT16: "V1_2", TENSOR_QUANT8_ASYMM: "V1_2" },
    }),
  prepare: prepareBroadcastPair,
  execute(inputs, outputs) {
    run(inputs, outputs, () => preluQuant8Params(inputs[0], inputs[1], outputs[0]));
  },
  bindReference(inputs, outputs) {
    if (inputs[0].type !== "TENSOR_QUANT8_ASYMM") return undefined;
    const params = preluQuant8Params(inputs[0], inputs[1], outputs[0]);
    return (inputs, outputs) => run(inputs, outputs, () => params);
  },
});
