/**
 * The validation and shape inference shared by the two-input broadcasting operations of
 * HAL 1.2 without a fused activation (MINIMUM, MAXIMUM, POW, PRELU and the comparisons):
 * both inputs of one type among `types`, one output of `outputType` (default: the input
 * type), numpy-style broadcasting of any rank.
 */
import { broadcastShape } from "../../kernels/elementwise_binary.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationSignature,
  type PrepareInput,
} from "../operation.ts";
import { versionOfInputType } from "./operand_types.ts";

/** What a two-input broadcasting operation accepts. */
export interface BroadcastPairTypes {
  /** The input types, each with the HAL version that introduced it. */
  types: Partial<Record<OperandType, HalVersion>>;
  /** The output type when it is not the input type (TENSOR_BOOL8 for comparisons). */
  outputType?: OperandType;
}

/** Checks arity and types of a two-input broadcasting operation; returns its HAL version. */
export function validateBroadcastPair(
  signature: OperationSignature,
  rules: BroadcastPairTypes,
): HalVersion {
  checkArity(signature, [2], 1);
  const input = signature.inputs[0];
  const version = versionOfInputType(input, rules.types);
  checkTypes(signature, [input.type, input.type], [rules.outputType ?? input.type]);
  return version;
}

/** The output shape: the inputs' shapes broadcast against each other. */
export function prepareBroadcastPair(inputs: readonly PrepareInput[]): number[][] {
  const [a, b] = inputs;
  check(a.type === b.type, `input types ${a.type} and ${b.type} differ`);
  const shape = broadcastShape(a.shape, b.shape);
  check(
    shape !== null,
    `input shapes [${a.shape.join(",")}] and [${b.shape.join(",")}] cannot be broadcast`,
  );
  return [shape];
}
