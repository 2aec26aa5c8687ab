/**
 * The definition shared by LOGICAL_AND and LOGICAL_OR: NNAPI's `logical::validate/prepare`
 * (two TENSOR_BOOL8 inputs broadcast numpy-style, a TENSOR_BOOL8 output, V1_2).
 */
import { broadcastShape } from "../../kernels/elementwise_binary.ts";
import type { Bool8BinaryKernel } from "../../kernels/elementwise_math.ts";
import type { OperationType } from "../../nnapi/types.ts";
import { check, checkArity, checkTypes, type OperationDefinition } from "../operation.ts";

/** Builds the definition of a broadcasting bool8 binary operation. */
export function logicalBinaryOperation<T extends OperationType>(
  type: T,
  kernel: Bool8BinaryKernel,
): OperationDefinition<T> {
  return {
    type,
    validate(signature) {
      checkArity(signature, [2], 1);
      checkTypes(signature, ["TENSOR_BOOL8", "TENSOR_BOOL8"], ["TENSOR_BOOL8"]);
      return "V1_2";
    },
    prepare(inputs) {
      const [a, b] = inputs;
      const shape = broadcastShape(a.shape, b.shape);
      check(
        shape !== null,
        `input shapes [${a.shape.join(",")}] and [${b.shape.join(",")}] cannot be broadcast`,
      );
      return [shape];
    },
    execute(inputs, outputs) {
      const [a, b] = inputs;
      const output = outputs[0];
      kernel(
        a.data as Uint8Array,
        a.shape,
        b.data as Uint8Array,
        b.shape,
        output.data as Uint8Array,
        output.shape,
      );
    },
  };
}
