/**
 * NNAPI vocabulary: operand types, lifetimes, operation types and HAL versions, as the
 * names used by the model format (the CTS vectors and docs/api.md).
 */

export const HAL_VERSIONS = ["V1_0", "V1_1", "V1_2", "V1_3"] as const;
export type HalVersion = typeof HAL_VERSIONS[number];

/** Orders HAL versions so that an operation's requirement can be compared with a device's. */
export function halAtLeast(version: HalVersion, min: HalVersion): boolean {
  return HAL_VERSIONS.indexOf(version) >= HAL_VERSIONS.indexOf(min);
}

/** The later of two HAL versions. */
export function laterHal(a: HalVersion, b: HalVersion): HalVersion {
  return halAtLeast(a, b) ? a : b;
}

// The names are the wire contract the SDK speaks too: one list, kept with the SDK (which
// imports nothing outside client/), and used by the service from there.
export {
  type Lifetime,
  LIFETIMES,
  OPERAND_TYPES,
  type OperandType,
  OPERATION_TYPES,
  type OperationType,
} from "../client/vocabulary.ts";

/** Fused activation codes of NNAPI `FuseCode`. */
export const FUSED_NONE = 0;
export const FUSED_RELU = 1;
export const FUSED_RELU1 = 2;
export const FUSED_RELU6 = 3;

/** Padding codes of NNAPI `PaddingCode` (implicit padding). */
export const PADDING_SAME = 1;
export const PADDING_VALID = 2;
