/** TANH: hyperbolic tangent (quant8 form since V1_2). */
import { tanhFloat32, tanhQuant8Table } from "../kernels/activation_functions.ts";
import { sigmoidQuant8Form, unaryOperation } from "./common/unary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** TANH; quant8 output has scale 1/128 and zero point 128. */
export const tanh: OperationDefinition<"TANH"> = withSignedQuant8(
  unaryOperation({
    type: "TANH",
    float: tanhFloat32,
    quant8: sigmoidQuant8Form({
      since: "V1_2",
      scale: 1 / 128,
      zeroPoint: 128,
      scaleText: "1/128",
      table: tanhQuant8Table,
    }),
  }),
);
