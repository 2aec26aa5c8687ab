/** The operand type rules most operations share. */
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import { check, type DeclaredOperand } from "../operation.ts";

/** Every tensor type of HAL 1.3 (what RANK and SHAPE read the shape of). */
export const TENSOR_TYPES: readonly OperandType[] = [
  "TENSOR_FLOAT16",
  "TENSOR_FLOAT32",
  "TENSOR_INT32",
  "TENSOR_QUANT8_ASYMM",
  "TENSOR_QUANT8_ASYMM_SIGNED",
  "TENSOR_QUANT8_SYMM",
  "TENSOR_QUANT8_SYMM_PER_CHANNEL",
  "TENSOR_QUANT16_ASYMM",
  "TENSOR_QUANT16_SYMM",
  "TENSOR_BOOL8",
];

/** Checks that input `position` has one of the `supported` types. */
export function checkInputType(
  operand: DeclaredOperand,
  position: number,
  supported: readonly OperandType[],
): void {
  check(
    supported.includes(operand.type),
    `input ${position} (operand ${operand.index}) has unsupported type ${operand.type}`,
  );
}

/**
 * The HAL version that introduced input 0's type in this operation, from `versions` (one
 * entry per supported type); rejects other types.
 */
export function versionOfInputType(
  operand: DeclaredOperand,
  versions: Partial<Record<OperandType, HalVersion>>,
): HalVersion {
  const version = versions[operand.type];
  check(
    version !== undefined,
    `input 0 (operand ${operand.index}) has unsupported type ${operand.type}`,
  );
  return version;
}

/** The scalar type of a float tensor type's parameters (FLOAT16 for TENSOR_FLOAT16). */
export function floatScalarType(tensorType: OperandType): "FLOAT32" | "FLOAT16" {
  return tensorType === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
}
