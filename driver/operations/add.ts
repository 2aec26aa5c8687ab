/** ADD: a + b with numpy-style broadcasting and a fused activation. */
import { addFloat32, addQuant8, addQuant8Params } from "../../kernels/elementwise_binary.ts";
import { binaryOperation } from "./common/binary.ts";
import type { OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

/** ADD; quant8 rescales both inputs to twice the larger input scale with a left shift of 20. */
export const add: OperationDefinition<"ADD"> = withSignedQuant8(
  binaryOperation({
    type: "ADD",
    float: addFloat32,
    quantParams: (input1, input2, output) =>
      addQuant8Params(input1, input2, output) ??
        `output scale ${output.scale} is too small for input scales ${input1.scale} and ${input2.scale}`,
    quant: addQuant8,
  }),
);
