/** Checks of the scalar parameters that several operations share. */
import { check, type DeclaredOperand, type PrepareInput } from "../operation.ts";

/**
 * The value of a scalar input when it is already known (a constant at validation or
 * preparation), else undefined.
 */
export function knownScalar(input: PrepareInput | DeclaredOperand): number | undefined {
  return input.value ? Number(input.value[0]) : undefined;
}

/** Checks a fused activation code (NNAPI `FuseCode`: NONE, RELU, RELU1, RELU6). */
export function checkFusedActivation(code: number, what: string): void {
  check(
    Number.isInteger(code) && code >= 0 && code <= 3,
    `${what} is fused activation code ${code}, expected 0 (NONE), 1 (RELU), 2 (RELU1) or 3 (RELU6)`,
  );
}
