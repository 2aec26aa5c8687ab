/**
 * ARGMAX and ARGMIN: the index of the extreme value along one axis (negative axes count
 * from the end; the first index wins ties), as TENSOR_INT32 with that axis removed.
 */
import { splitAtAxis } from "../../kernels/axis_split.ts";
import { argMinMax } from "../../kernels/reduction_kernels.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  scalarValue,
} from "../operation.ts";
import { checkConstantAxis, resolveAxis } from "./axis.ts";
import { versionOfInputType } from "./operand_types.ts";

/** Operand positions of ARGMAX and ARGMIN. */
export const ARG_MIN_MAX = { input: 0, axis: 1 } as const;

/** The definition of ARGMAX (`isMax`) or ARGMIN (HAL 1.2; quant8 compares raw values). */
export function argMinMaxOperation<T extends "ARGMAX" | "ARGMIN">(
  type: T,
  isMax: boolean,
): OperationDefinition<T> {
  return {
    type,
    validate(signature) {
      checkArity(signature, [2], 1);
      const input = signature.inputs[ARG_MIN_MAX.input];
      const version = versionOfInputType(input, {
        TENSOR_FLOAT32: "V1_2",
        TENSOR_FLOAT16: "V1_2",
        TENSOR_INT32: "V1_2",
        TENSOR_QUANT8_ASYMM: "V1_2",
      });
      checkTypes(signature, [input.type, "INT32"], ["TENSOR_INT32"]);
      checkConstantAxis(signature.inputs, ARG_MIN_MAX.axis, input.dimensions.length);
      return version;
    },
    prepare(inputs) {
      const shape = inputs[ARG_MIN_MAX.input].shape;
      check(shape.length >= 1, "input 0 has rank 0, expected at least 1");
      const axis = resolveAxis(
        scalarValue(inputs[ARG_MIN_MAX.axis], "input 1"),
        shape.length,
        "input 1",
      );
      return [shape.filter((_, d) => d !== axis)];
    },
    execute(inputs, outputs) {
      const input = inputs[ARG_MIN_MAX.input];
      const axis = resolveAxis(scalarOf(inputs[ARG_MIN_MAX.axis]), input.shape.length, "input 1");
      argMinMax(
        input.data!,
        splitAtAxis(input.shape, axis),
        isMax,
        outputs[0].data as Int32Array,
      );
    },
  };
}
