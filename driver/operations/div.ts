/** DIV: a / b with numpy-style broadcasting and a fused activation (float only). */
import { divFloat32 } from "../../kernels/elementwise_broadcast.ts";
import { laterHal } from "../../nnapi/types.ts";
import { binaryOperation } from "./common/binary.ts";
import { checkArity, type OperationDefinition, OperationError } from "./operation.ts";
import { versionOfInputType } from "./common/operand_types.ts";

const base = binaryOperation({
  type: "DIV",
  float: divFloat32,
  quantParams: () => "DIV has no quantized form",
  quant() {
    throw new OperationError("DIV has no quantized form");
  },
});

/** DIV (float32 since V1_1, float16 since V1_2); NNAPI has no quantized DIV. */
export const div: OperationDefinition<"DIV"> = {
  ...base,
  validate(signature) {
    checkArity(signature, [3], 1);
    const since = versionOfInputType(signature.inputs[0], {
      TENSOR_FLOAT32: "V1_1",
      TENSOR_FLOAT16: "V1_2",
    });
    return laterHal(base.validate(signature), since);
  },
};
