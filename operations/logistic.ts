/** LOGISTIC: 1 / (1 + exp(-x)). */
import { logisticFloat32, logisticQuant8Table } from "../kernels/activation_functions.ts";
import { sigmoidQuant8Form, unaryOperation } from "./common/unary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** LOGISTIC; quant8 output has scale 1/256 and zero point 0. */
export const logistic: OperationDefinition<"LOGISTIC"> = withSignedQuant8(
  unaryOperation({
    type: "LOGISTIC",
    float: logisticFloat32,
    quant8: sigmoidQuant8Form({
      since: "V1_0",
      scale: 1 / 256,
      zeroPoint: 0,
      scaleText: "1/256",
      table: logisticQuant8Table,
    }),
  }),
);
