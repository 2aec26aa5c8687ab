/** TANH: hyperbolic tangent (quant8 form since V1_2). */
import {
  lookupQuant8,
  sigmoidQuant8Params,
  tanhFloat32,
  tanhQuant8Table,
} from "../../kernels/activation_functions.ts";
import { checkSigmoidQuantization } from "./logistic.ts";
import type { OperationDefinition } from "./operation.ts";
import { OperationError } from "./operation.ts";
import { unaryOperation } from "./relu.ts";

/** TANH; quant8 output has scale 1/128 and zero point 128. */
export const tanh: OperationDefinition = unaryOperation({
  type: "TANH",
  float: tanhFloat32,
  quant8: {
    since: "V1_2",
    validate: (input, output) => checkSigmoidQuantization(input, output, 1 / 128, 128, "1/128"),
    execute(input, output) {
      const params = sigmoidQuant8Params(input.scale, input.zeroPoint);
      if (!params) throw new OperationError(`input scale ${input.scale} is too small`);
      lookupQuant8(input.data as Uint8Array, tanhQuant8Table(params), output.data as Uint8Array);
    },
  },
});
