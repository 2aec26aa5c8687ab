/**
 * DIV: a / b with numpy-style broadcasting and a fused activation. Forms: TENSOR_FLOAT32
 * (V1_1), TENSOR_FLOAT16 (V1_2), TENSOR_INT32 (V1_3: floor division as Python's `//`, the
 * NONE activation only; division by zero, undefined in NNAPI, gives 0 as in Android's
 * reference). NNAPI has no quantized DIV.
 */
import { divFloat32, divInt32 } from "../kernels/elementwise_broadcast.ts";
import { laterHal } from "../nnapi/types.ts";
import { binaryOperation } from "./common/binary.ts";
import { checkArity, type OperationDefinition, OperationError } from "./operation.ts";
import { versionOfInputType } from "./common/operand_types.ts";

const base = binaryOperation({
  type: "DIV",
  float: divFloat32,
  int32: divInt32,
  quantParams: () => "DIV has no quantized form",
  quant() {
    throw new OperationError("DIV has no quantized form");
  },
});

/** DIV; the shared broadcast validation plus DIV's own type list (no quant8). */
export const div: OperationDefinition<"DIV"> = {
  ...base,
  validate(signature) {
    checkArity(signature, [3], 1);
    const since = versionOfInputType(signature.inputs[0], {
      TENSOR_FLOAT32: "V1_1",
      TENSOR_FLOAT16: "V1_2",
      TENSOR_INT32: "V1_3",
    });
    return laterHal(base.validate(signature), since);
  },
};
