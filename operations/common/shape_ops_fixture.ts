/**
 * Test fixtures of the shape and layout operations' unit tests: declared operands for
 * `validate` and shape-inference inputs for `prepare`.
 */
import { fromNumbers } from "../../nnapi/tensor.ts";
import type { OperandType, OperationType } from "../../nnapi/types.ts";
import type { DeclaredOperand, OperationSignature, PrepareInput } from "../operation.ts";

/** A declared operand: a tensor or scalar of `type`, a constant when `value` is given. */
export function operand(
  type: OperandType,
  dimensions: number[],
  options: { value?: number[]; scale?: number; zeroPoint?: number } = {},
): Omit<DeclaredOperand, "index"> {
  const quantized = type === "TENSOR_QUANT8_ASYMM";
  return {
    type,
    dimensions,
    scale: options.scale ?? (quantized ? 0.5 : 0),
    zeroPoint: options.zeroPoint ?? 0,
    lifetime: options.value ? "CONSTANT_COPY" : "MODEL_INPUT",
    value: options.value ? fromNumbers(type, options.value) : undefined,
  };
}

/** A signature with operands numbered in order, inputs first. */
export function signatureOf(
  type: OperationType,
  inputs: Omit<DeclaredOperand, "index">[],
  outputs: Omit<DeclaredOperand, "index">[],
): OperationSignature {
  return {
    type,
    inputs: inputs.map((o, index) => ({ ...o, index })),
    outputs: outputs.map((o, i) => ({ ...o, index: inputs.length + i })),
  };
}

/** A shape-inference input; `value` undefined = known only at execution, null = omitted. */
export function known(
  type: OperandType,
  shape: number[],
  value?: number[] | null,
): PrepareInput {
  return {
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    value: value === null ? null : value === undefined ? undefined : fromNumbers(type, value),
  };
}
