/**
 * ADD, SUB, MUL, DIV, MINIMUM, MAXIMUM and HARD_SWISH on `cpu-simd`: float32 on static shapes, the generated
 * WebAssembly SIMD kernels (`kernels/f32_elementwise_simd.ts`), which equal the reference
 * bit for bit. The arithmetic takes operands of the output's layout, a single value or a
 * row along the last axis (a scale, a bias, per channel in NHWC) with a constant
 * activation; other broadcasts, other shapes than the planned ones and engines without SIMD
 * run the reference kernel.
 */
import {
  type ArithmeticOp,
  arithmeticSimd,
  hardSwishSimd,
  type OperandForm,
} from "../../../kernels/f32_elementwise_simd.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import { elementCount, isFullySpecified, sameShape } from "../../../nnapi/tensor.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import { add } from "../../../operations/add.ts";
import { div } from "../../../operations/div.ts";
import { hardSwish } from "../../../operations/hard_swish.ts";
import { maximum } from "../../../operations/maximum.ts";
import { minimum } from "../../../operations/minimum.ts";
import { mul } from "../../../operations/mul.ts";
import type { Kernel, OperationDefinition } from "../../../operations/operation.ts";
import { sub } from "../../../operations/sub.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/** Float32 operands whose shapes are all known. */
export function staticFloat({ inputs, outputs }: StepOperands, tensors: number): boolean {
  return inputs[0].type === "TENSOR_FLOAT32" &&
    [...inputs.slice(0, tensors), outputs[0]].every((t) => isFullySpecified(t.shape));
}

/**
 * Float32 operands; where all their shapes are known, `fits` them too (else the kernel is
 * bound per shape and checks them then).
 */
function floatFits(step: StepOperands, tensors: number, fits = () => true): boolean {
  if (step.inputs[0].type !== "TENSOR_FLOAT32") return false;
  return !staticFloat(step, tensors) || fits();
}

/**
 * How the SIMD kernel reads an operand of `shape` for an output of `outShape`: a tensor of
 * its layout, one value, or a block of the output's trailing extents repeated over its
 * leading ones (`[1, ..., 1, C]`, a per-channel scale or bias of an NHWC tensor; `[1, 1, T,
 * D]` over `[1, H, T, D]`, a position table over attention heads); undefined otherwise.
 */
export function operandForm(
  shape: readonly number[],
  outShape: readonly number[],
): OperandForm | undefined {
  const count = elementCount(shape);
  const n = elementCount(outShape);
  if (count === n) return "tensor";
  if (count === 1) return "scalar";
  let first = 0;
  while (first < shape.length && shape[first] === 1) first++;
  const block = shape.slice(first);
  const isRow = block.length <= outShape.length &&
    sameShape(block, outShape.slice(outShape.length - block.length));
  return isRow ? "row" : undefined;
}

/** The forms of both operands when the SIMD kernel takes them. */
export function forms({ inputs, outputs }: StepOperands): [OperandForm, OperandForm] | undefined {
  const [a, b] = inputs.slice(0, 2).map((t) => operandForm(t.shape, outputs[0].shape));
  if (!a || !b || (a !== "tensor" && b !== "tensor")) return undefined;
  return [a, b];
}

/**
 * The kernel on the first `tensors` inputs and the output, or the reference's where the
 * run's shapes are not the planned ones.
 */
function planned(
  step: StepOperands,
  tensors: number,
  reference: OperationDefinition,
  run: (inputs: Parameters<Kernel>[0], outputs: Parameters<Kernel>[1]) => boolean,
): Kernel {
  const shapes = [...step.inputs.slice(0, tensors).map((t) => t.shape), step.outputs[0].shape];
  return (inputs, outputs) => {
    const operands = [...inputs.slice(0, tensors), outputs[0]];
    const fits = operands.every((t, i) =>
      sameShape(t.shape, shapes[i]) && t.data instanceof Float32Array
    );
    if (!fits || !run(inputs, outputs)) reference.execute(inputs, outputs);
  };
}

/**
 * Outputs of fewer elements run the reference kernel: a SIMD call costs about half a
 * microsecond before its first element (operands placed in the kernel heap, the call), the
 * reference about 3 ns an element, so below this the reference is the faster.
 */
export const SIMD_MIN_ELEMENTS = 128;

/** Whether the step's output is known to be too small to pay for a SIMD call. */
function tooSmall(step: StepOperands): boolean {
  const shape = step.outputs[0].shape;
  return isFullySpecified(shape) && elementCount(shape) < SIMD_MIN_ELEMENTS;
}

/** The operations of the binary SIMD kernels. */
type BinaryType = "ADD" | "SUB" | "MUL" | "DIV" | "MINIMUM" | "MAXIMUM";

/**
 * A binary SIMD step: two operands in the kernel's forms, and for the arithmetic a constant
 * fused activation (input 2); MINIMUM and MAXIMUM have none.
 */
function binary<T extends OperationType & BinaryType>(
  type: T,
  op: ArithmeticOp,
  reference: OperationDefinition<T>,
): StepImplementation<T> {
  const activated = type !== "MINIMUM" && type !== "MAXIMUM";
  /** The clamp of the fused activation; undefined when it is not a constant. */
  const range = (step: StepOperands) => {
    if (!activated) return { min: -Infinity, max: Infinity };
    const code = step.inputs[2].value;
    return code == null ? undefined : activationRangeFloat(Number(code[0]));
  };
  return {
    type,
    supports: (step) => floatFits(step, 2, () => forms(step) !== undefined) && !!range(step),
    bind(step) {
      if (tooSmall(step)) return reference.execute;
      const clamp = range(step);
      const [aForm, bForm] = forms(step) ?? [];
      if (!clamp || !aForm || !bForm) return undefined;
      return planned(step, 2, reference, (inputs, outputs) =>
        arithmeticSimd(
          op,
          { data: inputs[0].data as Float32Array, form: aForm },
          { data: inputs[1].data as Float32Array, form: bForm },
          outputs[0].data as Float32Array,
          clamp.min,
          clamp.max,
        ));
    },
  };
}

export const addSimd = binary("ADD", "add", add);
export const subSimd = binary("SUB", "sub", sub);
export const mulSimd = binary("MUL", "mul", mul);
export const divSimd = binary("DIV", "div", div);
export const minimumSimd = binary("MINIMUM", "min", minimum);
export const maximumSimd = binary("MAXIMUM", "max", maximum);

export const hardSwishStep: StepImplementation<"HARD_SWISH"> = {
  type: "HARD_SWISH",
  supports: (step) => floatFits(step, 1),
  bind: (step) =>
    tooSmall(step) ? hardSwish.execute : planned(
      step,
      1,
      hardSwish,
      (inputs, outputs) =>
        hardSwishSimd(inputs[0].data as Float32Array, outputs[0].data as Float32Array),
    ),
};
