/**
 * The definition shared by the HAL 1.2 one-input elementwise operations (ABS, EXP, LOG,
 * NEG, SIN, SQRT, RSQRT, LOGICAL_NOT): NNAPI's `elementwise::validate/prepare` — the output
 * has the input's type and shape, any rank, and every form needs V1_2 unless the spec names a
 * later version for a type (ABS on TENSOR_INT32 is HAL 1.3).
 */
import { type FloatData, toFloat32, withFloat32Outputs } from "../../kernels/typed_arrays.ts";
import type { HalVersion, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  checkArity,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
} from "../operation.ts";
import { checkInputType } from "./operand_types.ts";

/** What distinguishes one HAL 1.2 unary elementwise operation from another. */
export interface MathUnarySpec<T extends OperationType = OperationType> {
  type: T;
  /** The float kernel; float16 tensors run it on float32 copies, as NNAPI does. */
  float?(input: Float32Array, output: Float32Array): void;
  int32?(input: Int32Array, output: Int32Array): void;
  bool8?(input: Uint8Array, output: Uint8Array): void;
  /** Types added after V1_2, with the HAL version that added them. */
  laterTypes?: Partial<Record<OperandType, HalVersion>>;
}

/** Output shape of an elementwise operation without a rank limit: the input's. */
export function prepareSameShape(inputs: readonly PrepareInput[]): number[][] {
  return [[...inputs[0].shape]];
}

/** Builds the definition of a HAL 1.2 one-input, one-output elementwise operation. */
export function mathUnaryOperation<T extends OperationType>(
  spec: MathUnarySpec<T>,
): OperationDefinition<T> {
  const supported: OperandType[] = [];
  if (spec.float) supported.push("TENSOR_FLOAT16", "TENSOR_FLOAT32");
  if (spec.int32) supported.push("TENSOR_INT32");
  if (spec.bool8) supported.push("TENSOR_BOOL8");
  return {
    type: spec.type,
    validate(signature) {
      checkArity(signature, [1], 1);
      const input = signature.inputs[0];
      checkInputType(input, 0, supported);
      checkTypes(signature, [input.type], [input.type]);
      return spec.laterTypes?.[input.type] ?? "V1_2";
    },
    prepare: prepareSameShape,
    execute(inputs, outputs) {
      const input = inputs[0];
      const output = outputs[0];
      if (output.data!.length === 0) return;
      switch (input.type) {
        case "TENSOR_INT32":
          spec.int32!(input.data as Int32Array, output.data as Int32Array);
          return;
        case "TENSOR_BOOL8":
          spec.bool8!(input.data as Uint8Array, output.data as Uint8Array);
          return;
        default:
          withFloat32Outputs([output.data as FloatData], ([out]) => {
            spec.float!(toFloat32(input.data as FloatData), out);
          });
      }
    },
  };
}
