/**
 * The definition shared by the one-input elementwise operations (RELU, RELU1, RELU6,
 * LOGISTIC, TANH, FLOOR): NNAPI's `activation::validate/prepare` (float32 and quant8 since
 * V1_0, float16 since V1_2, rank at most 4, output shape = input shape), and the quant8
 * forms they share (the RELU clamps, the LOGISTIC/TANH lookup tables).
 */
import {
  clampQuant8,
  lookupQuant8,
  type SigmoidQuant8Params,
  sigmoidQuant8Params,
} from "../../kernels/activation_functions.ts";
import { activationRangeQuantized } from "../../kernels/fixed_point.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../../kernels/typed_arrays.ts";
import type { TensorInfo } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type DeclaredOperand,
  type OperationDefinition,
  OperationError,
  type PrepareInput,
} from "../operation.ts";
import { versionOfInputType } from "./operand_types.ts";
import {
  checkFixedQuantization,
  checkSameQuantization,
  type FixedQuantization,
} from "./quantization.ts";

/** A uint8 kernel whose parameters are already bound (outputs carry their final quantization). */
export type Quant8UnaryKernel = (input: Uint8Array, output: Uint8Array) => void;

/** The quantized (TENSOR_QUANT8_ASYMM) form of a unary operation. */
export interface UnaryQuant8Form {
  /** The HAL version that introduced the quant8 form. */
  since: HalVersion;
  /** Checks the quantization of the declared input and output (throws OperationError). */
  validate(input: DeclaredOperand, output: DeclaredOperand): void;
  /**
   * Binds the parameters that depend only on the quantization (clamp bounds, lookup
   * tables): once per compilation when shapes are static, else at every execution.
   */
  prepare(input: TensorInfo, output: TensorInfo): Quant8UnaryKernel;
}

/** What distinguishes one unary elementwise operation from another. */
export interface UnarySpec<T extends OperationType = OperationType> {
  type: T;
  /** The float kernel; float16 tensors run it on float32 copies, as NNAPI does. */
  float(input: Float32Array, output: Float32Array): void;
  quant8?: UnaryQuant8Form;
}

/** Output shape of an elementwise operation: the input's (of rank at most 4). */
export function prepareElementwise(inputs: readonly PrepareInput[]): number[][] {
  const shape = inputs[0].shape;
  check(shape.length <= 4, `input 0 has rank ${shape.length}, expected at most 4`);
  return [[...shape]];
}

/** Builds the definition of a one-input, one-output elementwise operation. */
export function unaryOperation<T extends OperationType>(
  spec: UnarySpec<T>,
): OperationDefinition<T> {
  const versions: Partial<Record<OperandType, HalVersion>> = {
    TENSOR_FLOAT32: "V1_0",
    TENSOR_FLOAT16: "V1_2",
  };
  if (spec.quant8) versions.TENSOR_QUANT8_ASYMM = spec.quant8.since;
  return {
    type: spec.type,
    validate(signature) {
      checkArity(signature, [1], 1);
      const input = signature.inputs[0];
      const version = versionOfInputType(input, versions);
      checkTypes(signature, [input.type], [input.type]);
      checkRank(input, "input 0", (r) => r <= 4, "at most 4");
      if (input.type === "TENSOR_QUANT8_ASYMM") spec.quant8!.validate(input, signature.outputs[0]);
      return version;
    },
    prepare: prepareElementwise,
    execute(inputs, outputs) {
      const input = inputs[0];
      const output = outputs[0];
      if (output.data!.length === 0) return;
      if (input.type === "TENSOR_QUANT8_ASYMM") {
        spec.quant8!.prepare(input, output)(input.data as Uint8Array, output.data as Uint8Array);
        return;
      }
      withFloat32Outputs([output.data as FloatData], ([out]) => {
        spec.float(toFloat32(input.data as FloatData), out);
      });
    },
    bindReference(inputs, outputs) {
      if (inputs[0].type !== "TENSOR_QUANT8_ASYMM" || !spec.quant8) return undefined;
      let kernel: Quant8UnaryKernel;
      try {
        kernel = spec.quant8.prepare(inputs[0], outputs[0]);
      } catch (error) {
        if (error instanceof OperationError) return undefined; // the reference reports it
        throw error;
      }
      return (inputs, outputs) => {
        const out = outputs[0].data as Uint8Array;
        if (out.length > 0) kernel(inputs[0].data as Uint8Array, out);
      };
    },
  };
}

/** Quant8 form of the RELU family: the output keeps the input's quantization. */
export function clampQuant8Form(activation: number): UnaryQuant8Form {
  return {
    since: "V1_0",
    validate: (input, output) => checkSameQuantization(input, output),
    prepare(input) {
      const { min, max } = activationRangeQuantized(activation, input.scale, input.zeroPoint);
      return (x, out) => clampQuant8(x, out, min, max);
    },
  };
}

/** The fixed output quantization of quantized LOGISTIC/TANH and its lookup table. */
export interface SigmoidForm extends FixedQuantization {
  since: HalVersion;
  table(params: SigmoidQuant8Params): Uint8Array;
}

/**
 * Quant8 form of LOGISTIC/TANH: a fixed output quantization, an input scale that gives a
 * usable input multiplier (NNAPI fails the execution otherwise), and a 256-entry table.
 */
export function sigmoidQuant8Form(form: SigmoidForm): UnaryQuant8Form {
  return {
    since: form.since,
    validate(input, output) {
      checkFixedQuantization(output, form);
      check(
        sigmoidQuant8Params(input.scale, input.zeroPoint) !== null,
        `input 0 (operand ${input.index}) has scale ${input.scale}, too small (must exceed 2^-27)`,
      );
    },
    prepare(input) {
      const params = sigmoidQuant8Params(input.scale, input.zeroPoint);
      if (!params) throw new OperationError(`input scale ${input.scale} is too small`);
      const table = form.table(params);
      return (x, out) => lookupQuant8(x, table, out);
    },
  };
}
