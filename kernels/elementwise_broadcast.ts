/**
 * More broadcasting binary elementwise kernels on typed arrays (SUB, DIV, POW, MINIMUM,
 * MAXIMUM, PRELU and the comparisons), with the exact quantized arithmetic of the NNAPI CPU
 * reference: SUB reuses quantized ADD with a negated second multiplier, MINIMUM/MAXIMUM
 * requantize both inputs to the output's quantization, PRELU has one multiplier for
 * positive inputs and one for negative ones, comparisons dequantize to float32.
 */
import {
  type AddQuant8Params,
  addQuant8Params,
  forEachBroadcastRow,
  type Quantization,
} from "./elementwise_binary.ts";
import {
  multiplyByQuantizedMultiplier,
  multiplyByQuantizedMultiplierSmallerThanOne,
  quantizeMultiplier,
  roundHalfAwayFromZero,
} from "./fixed_point.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

export { divFloat32, subFloat32 } from "./elementwise_binary.ts";

/**
 * The parameters of quantized SUB: those of quantized ADD with the second input's
 * multiplier negated (NNAPI `subQuant8` runs TFLite's `BroadcastAdd` so); null when a
 * multiplier is out of range.
 */
export function subQuant8Params(
  input1: Quantization,
  input2: Quantization,
  output: Quantization,
): AddQuant8Params | null {
  const p = addQuant8Params(input1, input2, output);
  if (!p) return null;
  const multiplier = -p.input2Multiplier;
  const table = new Int32Array(256);
  const shifted = 2 ** p.leftShift;
  for (let q = 0; q < 256; q++) {
    table[q] = multiplyByQuantizedMultiplierSmallerThanOne(
      ((p.input2Offset + q) * shifted) | 0,
      multiplier,
      p.input2Shift,
    );
  }
  return { ...p, input2Multiplier: multiplier, input2Table: table };
}

/** Float POW with broadcasting (`std::pow` on float). */
export function powFloat32(
  base: Float32Array,
  baseShape: readonly number[],
  exponent: Float32Array,
  exponentShape: readonly number[],
  out: Float32Array,
  outShape: readonly number[],
): void {
  forEachBroadcastRow(baseShape, exponentShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      out[o + i] = Math.fround(Math.pow(base[ia], exponent[ib]));
    }
  });
}

/**
 * MINIMUM or MAXIMUM with broadcasting on values of one type (float32, float16, int32):
 * the result is one of the inputs, so no rounding happens.
 */
export function minMaxBroadcast(
  a: ReadonlyNumbers,
  aShape: readonly number[],
  b: ReadonlyNumbers,
  bShape: readonly number[],
  out: Numbers,
  outShape: readonly number[],
  isMinimum: boolean,
): void {
  forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      const x = a[ia];
      const y = b[ib];
      // std::min(x, y) = y < x ? y : x; std::max(x, y) = x < y ? y : x.
      out[o + i] = isMinimum ? (y < x ? y : x) : (x < y ? y : x);
    }
  });
}

/**
 * NNAPI `requantize` of every byte: dequantize (int times float scale, in float), divide
 * by the new scale and add its zero point in double, clamp to [0, 255] and round.
 */
export function requantizeTable(from: Quantization, to: Quantization): Uint8Array {
  const table = new Uint8Array(256);
  for (let q = 0; q < 256; q++) {
    const real = Math.fround((q - from.zeroPoint) * from.scale);
    const v = real / to.scale + to.zeroPoint;
    table[q] = v < 0 ? 0 : v > 255 ? 255 : roundHalfAwayFromZero(v);
  }
  return table;
}

/** Quantized MINIMUM or MAXIMUM: both inputs requantized to the output, then compared. */
export function minMaxQuant8(
  a: Uint8Array,
  aShape: readonly number[],
  b: Uint8Array,
  bShape: readonly number[],
  out: Uint8Array,
  outShape: readonly number[],
  tables: { a: Uint8Array; b: Uint8Array },
  isMinimum: boolean,
): void {
  const { a: ta, b: tb } = tables;
  forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      const x = ta[a[ia]];
      const y = tb[b[ib]];
      out[o + i] = isMinimum ? (y < x ? y : x) : (x < y ? y : x);
    }
  });
}

/** Float PRELU with a broadcast alpha: x >= 0 ? x : x * alpha. */
export function preluFloat32(
  input: Float32Array,
  inputShape: readonly number[],
  alpha: Float32Array,
  alphaShape: readonly number[],
  out: Float32Array,
  outShape: readonly number[],
): void {
  forEachBroadcastRow(inputShape, alphaShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      const x = input[ia];
      out[o + i] = x >= 0 ? x : Math.fround(x * alpha[ib]);
    }
  });
}

/** Fixed-point parameters of quantized PRELU (signed shifts, positive = left). */
export interface PreluQuant8Params {
  inputOffset: number;
  alphaOffset: number;
  outputOffset: number;
  positiveMultiplier: number;
  positiveShift: number;
  negativeMultiplier: number;
  negativeShift: number;
}

/**
 * The parameters NNAPI PRELU derives from the scales: input_scale / output_scale for
 * non-negative inputs, input_scale * alpha_scale (a float product) / output_scale for
 * negative ones.
 */
export function preluQuant8Params(
  input: Quantization,
  alpha: Quantization,
  output: Quantization,
): PreluQuant8Params {
  const positive = quantizeMultiplier(input.scale / output.scale);
  const negative = quantizeMultiplier(Math.fround(input.scale * alpha.scale) / output.scale);
  return {
    inputOffset: -input.zeroPoint,
    alphaOffset: -alpha.zeroPoint,
    outputOffset: output.zeroPoint,
    positiveMultiplier: positive.multiplier,
    positiveShift: positive.shift,
    negativeMultiplier: negative.multiplier,
    negativeShift: negative.shift,
  };
}

/** Quantized PRELU with a broadcast alpha, saturated to [0, 255]. */
export function preluQuant8(
  input: Uint8Array,
  inputShape: readonly number[],
  alpha: Uint8Array,
  alphaShape: readonly number[],
  out: Uint8Array,
  outShape: readonly number[],
  p: PreluQuant8Params,
): void {
  forEachBroadcastRow(inputShape, alphaShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      const x = p.inputOffset + input[ia];
      const v = x >= 0
        ? p.outputOffset + multiplyByQuantizedMultiplier(x, p.positiveMultiplier, p.positiveShift)
        : p.outputOffset +
          multiplyByQuantizedMultiplier(
            x * (p.alphaOffset + alpha[ib]),
            p.negativeMultiplier,
            p.negativeShift,
          );
      out[o + i] = v < 0 ? 0 : v > 255 ? 255 : v;
    }
  });
}

/** The six comparisons of NNAPI (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL). */
export type Comparison = "eq" | "ne" | "lt" | "le" | "gt" | "ge";

/**
 * Compares with broadcasting, writing 1/0 bytes (TENSOR_BOOL8). Values are compared as
 * they are read; quantized inputs are dequantized first (see {@link dequantizeFloat32}).
 */
export function compareBroadcast(
  a: ReadonlyNumbers,
  aShape: readonly number[],
  b: ReadonlyNumbers,
  bShape: readonly number[],
  out: Uint8Array,
  outShape: readonly number[],
  comparison: Comparison,
): void {
  // The comparison is chosen per row, not called per element (see elementwise_math.ts).
  forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
    const end = o + n;
    switch (comparison) {
      case "eq":
        for (; o < end; o++, ia += sa, ib += sb) out[o] = a[ia] === b[ib] ? 1 : 0;
        return;
      case "ne":
        for (; o < end; o++, ia += sa, ib += sb) out[o] = a[ia] !== b[ib] ? 1 : 0;
        return;
      case "lt":
        for (; o < end; o++, ia += sa, ib += sb) out[o] = a[ia] < b[ib] ? 1 : 0;
        return;
      case "le":
        for (; o < end; o++, ia += sa, ib += sb) out[o] = a[ia] <= b[ib] ? 1 : 0;
        return;
      case "gt":
        for (; o < end; o++, ia += sa, ib += sb) out[o] = a[ia] > b[ib] ? 1 : 0;
        return;
      case "ge":
        for (; o < end; o++, ia += sa, ib += sb) out[o] = a[ia] >= b[ib] ? 1 : 0;
        return;
    }
  });
}

/** Real values of quant8 data as NNAPI comparisons compute them: (q - zeroPoint) * scale in float. */
export function dequantizeFloat32(data: Uint8Array, quantization: Quantization): Float32Array {
  const table = new Float32Array(256);
  for (let q = 0; q < 256; q++) table[q] = (q - quantization.zeroPoint) * quantization.scale;
  const out = new Float32Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = table[data[i]];
  return out;
}

/**
 * A broadcasting int32 arithmetic kernel (HAL 1.3's TENSOR_INT32 ADD, SUB, MUL, DIV); int32
 * arithmetic has no fused activation, so there is no clamp.
 */
export type Int32BinaryKernel = (
  a: Int32Array,
  aShape: readonly number[],
  b: Int32Array,
  bShape: readonly number[],
  out: Int32Array,
  outShape: readonly number[],
) => void;

function int32Kernel(op: (x: number, y: number) => number): Int32BinaryKernel {
  return (a, aShape, b, bShape, out, outShape) => {
    forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
      for (let i = 0; i < n; i++, ia += sa, ib += sb) out[o + i] = op(a[ia], b[ib]);
    });
  };
}

/**
 * Python's `a // b` on int32 values, as NNAPI defines int32 DIV: the quotient rounded toward
 * negative infinity. Division by zero is undefined in NNAPI; like Android's reference this
 * gives 0 rather than failing. -2^31 // -1 wraps to -2^31 (two's complement). The double
 * quotient of two int32 values is never rounded across an integer, so `Math.floor` is exact.
 */
export function floorDivInt32(a: number, b: number): number {
  return b === 0 ? 0 : Math.floor(a / b) | 0;
}

/** int32 ADD with broadcasting; overflow wraps (two's complement). */
export const addInt32: Int32BinaryKernel = int32Kernel((x, y) => (x + y) | 0);

/** int32 SUB with broadcasting; overflow wraps (two's complement). */
export const subInt32: Int32BinaryKernel = int32Kernel((x, y) => (x - y) | 0);

/** int32 MUL with broadcasting; the product wraps to its low 32 bits. */
export const mulInt32: Int32BinaryKernel = int32Kernel(Math.imul);

/** int32 DIV with broadcasting: floor division ({@link floorDivInt32}). */
export const divInt32: Int32BinaryKernel = int32Kernel(floorDivInt32);
