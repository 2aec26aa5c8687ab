/**
 * The definition shared by the broadcasting binary arithmetic operations (ADD, SUB, MUL,
 * DIV): NNAPI `broadcast::validate` / `prepare` (float32 and quant8 since V1_0, float16 since
 * V1_2, TENSOR_INT32 since V1_3 for operations with an int32 kernel; ranks at most 4, a fused
 * activation, which must be NONE for int32). Quant8 parameters depend only on the scales, so
 * a compilation with static shapes computes them once (`bindReference`).
 */
import {
  type addFloat32,
  broadcastShape,
  type Quantization,
} from "../../kernels/elementwise_binary.ts";
import type { Int32BinaryKernel } from "../../kernels/elementwise_broadcast.ts";
import { activationRangeFloat, activationRangeQuantized } from "../../kernels/fixed_point.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../../kernels/typed_arrays.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  OperationError,
  scalarOf,
} from "../operation.ts";
import { versionOfInputType } from "./operand_types.ts";
import { checkFusedActivation, knownScalar } from "./scalars.ts";

/** A float kernel of a broadcasting binary operation, clamping to [min, max]. */
export type BinaryFloatKernel = typeof addFloat32;

/** What distinguishes ADD, SUB, MUL and DIV. */
export interface BinarySpec<P, T extends OperationType = OperationType> {
  type: T;
  float: BinaryFloatKernel;
  /** The TENSOR_INT32 kernel (HAL 1.3); without it int32 operands are rejected. */
  int32?: Int32BinaryKernel;
  /** Fixed-point parameters from the scales, or a message saying why there are none. */
  quantParams(input1: Quantization, input2: Quantization, output: Quantization): P | string;
  quant(
    a: Uint8Array,
    aShape: readonly number[],
    b: Uint8Array,
    bShape: readonly number[],
    out: Uint8Array,
    outShape: readonly number[],
    params: P,
    min: number,
    max: number,
  ): void;
}

/** NNAPI: "For a TENSOR_INT32 tensor, the FuseCode must be NONE" (int32 is never clamped). */
function checkInt32Activation(code: number, what: string): void {
  check(
    code === 0,
    `${what} is fused activation code ${code}, but TENSOR_INT32 operands take only 0 (NONE)`,
  );
}

/** Builds the definition of a broadcasting binary arithmetic operation. */
export function binaryOperation<P, T extends OperationType>(
  spec: BinarySpec<P, T>,
): OperationDefinition<T> {
  /** Runs the operation; `quantParams` gives the quant8 parameters when they are needed. */
  function run(inputs: readonly Tensor[], outputs: readonly Tensor[], quantParams: () => P): void {
    const [a, b, activationInput] = inputs;
    const output = outputs[0];
    const activation = scalarOf(activationInput);
    checkFusedActivation(activation, "input 2");
    if (output.data!.length === 0) return;
    if (a.type === "TENSOR_INT32") {
      checkInt32Activation(activation, "input 2");
      spec.int32!(
        a.data as Int32Array,
        a.shape,
        b.data as Int32Array,
        b.shape,
        output.data as Int32Array,
        output.shape,
      );
      return;
    }
    if (a.type === "TENSOR_QUANT8_ASYMM") {
      const params = quantParams();
      const { min, max } = activationRangeQuantized(activation, output.scale, output.zeroPoint);
      spec.quant(
        a.data as Uint8Array,
        a.shape,
        b.data as Uint8Array,
        b.shape,
        output.data as Uint8Array,
        output.shape,
        params,
        min,
        max,
      );
      return;
    }
    const { min, max } = activationRangeFloat(activation);
    withFloat32Outputs([output.data as FloatData], ([result]) => {
      spec.float(
        toFloat32(a.data as FloatData),
        a.shape,
        toFloat32(b.data as FloatData),
        b.shape,
        result,
        output.shape,
        min,
        max,
      );
    });
  }

  return {
    type: spec.type,
    validate(signature) {
      checkArity(signature, [3], 1);
      const [input1, input2, activation] = signature.inputs;
      const versions: Partial<Record<OperandType, HalVersion>> = {
        TENSOR_FLOAT32: "V1_0",
        TENSOR_QUANT8_ASYMM: "V1_0",
        TENSOR_FLOAT16: "V1_2",
      };
      if (spec.int32) versions.TENSOR_INT32 = "V1_3";
      const version = versionOfInputType(input1, versions);
      checkTypes(signature, [input1.type, input1.type, "INT32"], [input1.type]);
      checkRank(input1, "input 0", (r) => r <= 4, "at most 4");
      checkRank(input2, "input 1", (r) => r <= 4, "at most 4");
      const code = knownScalar(activation);
      if (code !== undefined) {
        const what = `input 2 (operand ${activation.index})`;
        checkFusedActivation(code, what);
        if (input1.type === "TENSOR_INT32") checkInt32Activation(code, what);
      }
      if (input1.type === "TENSOR_QUANT8_ASYMM") {
        const output = signature.outputs[0];
        const params = spec.quantParams(input1, input2, output);
        if (typeof params === "string") {
          throw new OperationError(
            `${params} (operands ${input1.index}, ${input2.index} -> ${output.index})`,
          );
        }
      }
      return version;
    },
    prepare(inputs) {
      const [a, b] = inputs;
      check(a.shape.length <= 4, `input 0 has rank ${a.shape.length}, expected at most 4`);
      check(b.shape.length <= 4, `input 1 has rank ${b.shape.length}, expected at most 4`);
      const shape = broadcastShape(a.shape, b.shape);
      check(
        shape !== null,
        `input shapes [${a.shape.join(",")}] and [${b.shape.join(",")}] cannot be broadcast`,
      );
      return [shape];
    },
    execute(inputs, outputs) {
      run(inputs, outputs, () => {
        const params = spec.quantParams(inputs[0], inputs[1], outputs[0]);
        if (typeof params === "string") throw new OperationError(params);
        return params;
      });
    },
    bindReference(inputs, outputs) {
      if (inputs[0].type !== "TENSOR_QUANT8_ASYMM") return undefined;
      const params = spec.quantParams(inputs[0], inputs[1], outputs[0]);
      if (typeof params === "string") return undefined; // the reference kernel reports it
      return (inputs, outputs) => run(inputs, outputs, () => params);
    },
  };
}
