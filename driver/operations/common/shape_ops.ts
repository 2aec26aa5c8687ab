/**
 * What the shape and layout operations share (PAD, TRANSPOSE, STRIDED_SLICE, SLICE, SPLIT,
 * SQUEEZE, EXPAND_DIMS, GATHER, TILE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, CHANNEL_SHUFFLE):
 * they move elements without arithmetic, so every output has input 0's type and, when
 * quantized, its scale and zero point; their parameters are INT32 vectors.
 */
import type { Tensor } from "../../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../../nnapi/types.ts";
import {
  check,
  type DeclaredOperand,
  type OperationSignature,
  type PrepareInput,
  tensorValue,
} from "../operation.ts";
import { checkInputType } from "./operand_types.ts";

/** The data types the layout operations of HAL 1.1 move (float16 since HAL 1.2). */
export const MOVED_TYPES: readonly OperandType[] = [
  "TENSOR_FLOAT32",
  "TENSOR_QUANT8_ASYMM",
  "TENSOR_FLOAT16",
];

/** {@link MOVED_TYPES} and TENSOR_INT32, as the HAL 1.2 operations take them. */
export const MOVED_TYPES_WITH_INT32: readonly OperandType[] = [...MOVED_TYPES, "TENSOR_INT32"];

/**
 * Checks input 0 has one of the `supported` types and every output has its type and
 * quantization; returns input 0.
 */
export function checkMovedOperand(
  signature: OperationSignature,
  supported: readonly OperandType[],
): DeclaredOperand {
  const input = signature.inputs[0];
  checkInputType(input, 0, supported);
  signature.outputs.forEach((output, i) => {
    check(
      output.type === input.type,
      `output ${i} (operand ${output.index}) has type ${output.type}, expected ${input.type}`,
    );
    if (input.type !== "TENSOR_QUANT8_ASYMM") return;
    check(
      output.scale === input.scale && output.zeroPoint === input.zeroPoint,
      `output ${i} (operand ${output.index}) has scale ${output.scale} and zero point ` +
        `${output.zeroPoint}, expected the input's ${input.scale} and ${input.zeroPoint}`,
    );
  });
  return input;
}

/** `base`, or V1_2 when input 0 is float16 (HAL 1.2 added float16 to every operation). */
export function versionWithFloat16(input: DeclaredOperand, base: HalVersion): HalVersion {
  return input.type === "TENSOR_FLOAT16" ? "V1_2" : base;
}

/** Checks a shape's rank during shape inference. */
export function checkShapeRank(
  shape: readonly number[],
  what: string,
  min: number,
  max: number,
): void {
  check(
    shape.length >= min && shape.length <= max,
    `${what} has rank ${shape.length}, expected ${min === max ? min : `${min} to ${max}`}`,
  );
}

/**
 * The values of an INT32 vector input of `length` elements (its declared shape must be
 * [length]); throws ValueNotYetKnown before execution when it is not a constant.
 */
export function int32Vector(input: PrepareInput, what: string, length?: number): number[] {
  const shape = input.shape;
  check(shape.length === 1, `${what} has rank ${shape.length}, expected 1`);
  if (length !== undefined) {
    check(shape[0] === length, `${what} has ${shape[0]} elements, expected ${length}`);
  }
  return Array.from(tensorValue(input, what), Number);
}

/**
 * An executing call's tensors seen as shape-inference inputs, so that `execute` derives its
 * geometry with the very code `prepare` used (parameters may have been model inputs).
 */
export function knownInputs(tensors: readonly Tensor[]): PrepareInput[] {
  return tensors.map((t) => ({ ...t, value: t.data }));
}

/**
 * PAD / PAD_V2 geometry: input 1 holds [rank, 2] (before, after) counts, all >= 0. Returns
 * the padded shape and the `before` counts.
 */
export function padGeometry(
  inputs: readonly PrepareInput[],
): { shape: number[]; before: number[] } {
  const shape = inputs[0].shape;
  checkShapeRank(shape, "input 0", 1, 4);
  const paddings = inputs[1];
  const rank = shape.length;
  check(
    paddings.shape.length === 2 && paddings.shape[0] === rank && paddings.shape[1] === 2,
    `paddings (input 1) has shape [${paddings.shape.join(",")}], expected [${rank},2]`,
  );
  const values = tensorValue(paddings, "paddings (input 1)");
  const before: number[] = [];
  const out: number[] = [];
  for (let d = 0; d < rank; d++) {
    const head = Number(values[2 * d]);
    const tail = Number(values[2 * d + 1]);
    check(
      head >= 0 && tail >= 0,
      `paddings (input 1) of dimension ${d} are ${head} and ${tail}, expected >= 0`,
    );
    before.push(head);
    out.push(shape[d] + head + tail);
  }
  return { shape: out, before };
}
