/**
 * SELECT: `output[i] = condition[i] ? input1[i] : input2[i]` (V1_2). The condition is a
 * TENSOR_BOOL8 of the inputs' shape; quant8 inputs are requantized to the output's scale and
 * zero point as NNAPI's reference does.
 */
import { selectElements, selectQuant8 } from "../kernels/elementwise_math.ts";
import type { Numbers, ReadonlyNumbers } from "../kernels/typed_arrays.ts";
import { checkInputType } from "./common/operand_types.ts";
import { check, checkArity, checkTypes, type OperationDefinition } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** SELECT on same-shaped tensors; the output has their shape. */
export const select: OperationDefinition<"SELECT"> = withSignedQuant8({
  type: "SELECT",
  validate(signature) {
    checkArity(signature, [3], 1);
    const input1 = signature.inputs[1];
    checkInputType(input1, 1, [
      "TENSOR_FLOAT16",
      "TENSOR_FLOAT32",
      "TENSOR_INT32",
      "TENSOR_QUANT8_ASYMM",
    ]);
    checkTypes(signature, ["TENSOR_BOOL8", input1.type, input1.type], [input1.type]);
    return "V1_2";
  },
  prepare(inputs) {
    const [condition, input1, input2] = inputs;
    check(
      sameShape(condition.shape, input1.shape),
      `condition shape [${condition.shape.join(",")}] differs from input 1 shape ` +
        `[${input1.shape.join(",")}]`,
    );
    check(
      sameShape(input1.shape, input2.shape),
      `input 1 shape [${input1.shape.join(",")}] differs from input 2 shape ` +
        `[${input2.shape.join(",")}]`,
    );
    return [[...input1.shape]];
  },
  execute(inputs, outputs) {
    const [condition, input1, input2] = inputs;
    const output = outputs[0];
    if (output.type === "TENSOR_QUANT8_ASYMM") {
      selectQuant8(
        condition.data as Uint8Array,
        input1.data as Uint8Array,
        input1,
        input2.data as Uint8Array,
        input2,
        output.data as Uint8Array,
        output,
      );
      return;
    }
    selectElements(
      condition.data as Uint8Array,
      input1.data as ReadonlyNumbers,
      input2.data as ReadonlyNumbers,
      output.data as Numbers,
    );
  },
});
