/**
 * What the shape and layout operations share (PAD, TRANSPOSE, STRIDED_SLICE, SLICE, SPLIT,
 * SQUEEZE, EXPAND_DIMS, GATHER, TILE, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, CHANNEL_SHUFFLE):
 * they move elements without arithmetic, so every output has input 0's type and, when
 * quantized, its scale and zero point; their parameters are INT32 vectors.
 */
import type { ImageDims } from "../../kernels/image_layout.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType } from "../../nnapi/types.ts";
import {
  check,
  checkRank,
  checkTypes,
  type DeclaredOperand,
  type OperationSignature,
  type PrepareInput,
  scalarValue,
  tensorValue,
} from "../operation.ts";
import { imageDims } from "./layout.ts";
import { checkInputType } from "./operand_types.ts";
import { isQuant8Asymm } from "./signed.ts";

/**
 * The data types the layout operations move: those of HAL 1.1, float16 since HAL 1.2 and
 * signed quant8 since HAL 1.3 (an operation needs its operand types' HAL version).
 */
export const MOVED_TYPES: readonly OperandType[] = [
  "TENSOR_FLOAT32",
  "TENSOR_QUANT8_ASYMM",
  "TENSOR_FLOAT16",
  "TENSOR_QUANT8_ASYMM_SIGNED",
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
    if (!isQuant8Asymm(input.type)) return;
    check(
      output.scale === input.scale && output.zeroPoint === input.zeroPoint,
      `output ${i} (operand ${output.index}) has scale ${output.scale} and zero point ` +
        `${output.zeroPoint}, expected the input's ${input.scale} and ${input.zeroPoint}`,
    );
  });
  return input;
}

/** A declared rank a shape operation requires of an input: [position, name, rank]. */
export type RankRule = readonly [
  number,
  string,
  number | `at most ${number}` | `at least ${number}`,
];

/**
 * Validates a one-output shape operation: input 0 of a `supported` type moved unchanged to
 * the output (see {@link checkMovedOperand}), `params` the types of inputs 1, 2, ..., and the
 * declared `ranks`. Returns input 0.
 */
export function validateMoved(
  signature: OperationSignature,
  options: {
    supported: readonly OperandType[];
    params: readonly OperandType[];
    ranks: readonly RankRule[];
  },
): DeclaredOperand {
  const input = checkMovedOperand(signature, options.supported);
  checkTypes(signature, [input.type, ...options.params], [input.type]);
  for (const [position, what, rank] of options.ranks) {
    const fits = typeof rank === "number"
      ? (r: number) => r === rank
      : rank.startsWith("at most")
      ? (r: number) => r <= Number(rank.slice("at most ".length))
      : (r: number) => r >= Number(rank.slice("at least ".length));
    checkRank(signature.inputs[position], what, fits, String(rank));
  }
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

/**
 * What BATCH_TO_SPACE_ND and SPACE_TO_BATCH_ND read first: the 4-D input's NHWC extents
 * (NCHW when the optional flag at `layout` is set) and the block shape at input 1, two
 * entries >= 1.
 */
export function blockGeometry(
  inputs: readonly PrepareInput[],
  layout: number,
): { nchw: boolean; input: ImageDims; block: [number, number] } {
  checkShapeRank(inputs[0].shape, "input 0", 4, 4);
  const nchw = inputs.length > layout &&
    scalarValue(inputs[layout], `layout (input ${layout})`) !== 0;
  const input = imageDims(inputs[0].shape, nchw);
  const [bh, bw] = int32Vector(inputs[1], "block shape (input 1)", 2);
  check(bh >= 1 && bw >= 1, `block shape (input 1) is [${bh},${bw}], expected entries >= 1`);
  return { nchw, input, block: [bh, bw] };
}
