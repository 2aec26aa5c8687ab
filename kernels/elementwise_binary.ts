/**
 * Broadcasting binary elementwise kernels (ADD, MUL) on typed arrays: numpy-style
 * broadcasting from the trailing dimensions, a fused activation range, and the exact
 * quantized arithmetic of the NNAPI CPU reference (TFLite `BroadcastAdd4DSlow` /
 * `BroadcastMul4DSlow` / `AddElementwise`).
 */
import { multiplyByQuantizedMultiplierSmallerThanOne, quantizeMultiplier } from "./fixed_point.ts";

/**
 * NNAPI `calculateBroadcastedShape`: aligns the shapes on their trailing dimensions; each
 * pair of extents must be equal or one of them 1. Returns null when they are incompatible.
 */
export function broadcastShape(a: readonly number[], b: readonly number[]): number[] | null {
  const rank = Math.max(a.length, b.length);
  const out = new Array<number>(rank);
  for (let i = 0; i < rank; i++) {
    const da = i < rank - a.length ? 1 : a[i - (rank - a.length)];
    const db = i < rank - b.length ? 1 : b[i - (rank - b.length)];
    if (da !== db && da !== 1 && db !== 1) return null;
    out[i] = da === 1 ? db : da;
  }
  return out;
}

/**
 * Visits the output of a broadcast binary operation row by row (a row runs along the
 * innermost output dimension): `row(aOffset, aStep, bOffset, bStep, outOffset, length)`,
 * where a step is 0 when that input is broadcast along the row. Equal shapes give one row.
 */
export function forEachBroadcastRow(
  aShape: readonly number[],
  bShape: readonly number[],
  outShape: readonly number[],
  row: (
    aOffset: number,
    aStep: number,
    bOffset: number,
    bStep: number,
    outOffset: number,
    length: number,
  ) => void,
): void {
  const total = count(outShape);
  if (total === 0) return;
  // One row when neither input broadcasts (equal element counts mean equal layouts) or one
  // is a single value: no per-row calls at all.
  const [aCount, bCount] = [count(aShape), count(bShape)];
  if ((aCount === total || aCount === 1) && (bCount === total || bCount === 1)) {
    row(0, aCount === 1 && total > 1 ? 0 : 1, 0, bCount === 1 && total > 1 ? 0 : 1, 0, total);
    return;
  }
  const rank = outShape.length;
  const aStrides = broadcastStrides(aShape, rank);
  const bStrides = broadcastStrides(bShape, rank);
  const inner = rank === 0 ? 1 : outShape[rank - 1];
  const aStep = rank === 0 ? 0 : aStrides[rank - 1];
  const bStep = rank === 0 ? 0 : bStrides[rank - 1];
  const rows = total / inner;
  const index = new Array<number>(Math.max(rank - 1, 0)).fill(0);
  let aOffset = 0;
  let bOffset = 0;
  for (let r = 0; r < rows; r++) {
    row(aOffset, aStep, bOffset, bStep, r * inner, inner);
    // Odometer increment over the outer dimensions, keeping the input offsets in step.
    for (let d = rank - 2; d >= 0; d--) {
      index[d]++;
      aOffset += aStrides[d];
      bOffset += bStrides[d];
      if (index[d] < outShape[d]) break;
      aOffset -= aStrides[d] * index[d];
      bOffset -= bStrides[d] * index[d];
      index[d] = 0;
    }
  }
}

function count(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Element strides of a shape aligned to `rank` trailing dimensions; 0 where broadcast. */
function broadcastStrides(shape: readonly number[], rank: number): number[] {
  const strides = new Array<number>(rank).fill(0);
  let stride = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    const d = rank - shape.length + i;
    strides[d] = shape[i] === 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

/** A float32 kernel with broadcasting and a fused activation range [min, max]. */
export type ClampedFloat32Kernel = (
  a: Float32Array,
  aShape: readonly number[],
  b: Float32Array,
  bShape: readonly number[],
  out: Float32Array,
  outShape: readonly number[],
  min: number,
  max: number,
) => void;

/** The float arithmetic operations, by the code their shared kernel branches on. */
const enum Arithmetic {
  Add,
  Sub,
  Mul,
  Div,
}

/**
 * The float kernel of an arithmetic operation: `op` on each broadcast pair, rounded to
 * float32 and clamped to [min, max]. One loop branches on the operation (the branch is
 * the same for every element of a call) instead of calling a function per element, which
 * V8 cannot inline once the four operations share the loop.
 */
function arithmeticFloat32(op: Arithmetic): ClampedFloat32Kernel {
  return (a, aShape, b, bShape, out, outShape, min, max) => {
    forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
      for (let i = 0; i < n; i++, ia += sa, ib += sb) {
        const x = a[ia];
        const y = b[ib];
        const v = Math.fround(
          op === Arithmetic.Add
            ? x + y
            : op === Arithmetic.Sub
            ? x - y
            : op === Arithmetic.Mul
            ? x * y
            : x / y,
        );
        out[o + i] = v < min ? min : v > max ? max : v;
      }
    });
  };
}

/** Float ADD with broadcasting, clamped to [min, max] (the fused activation). */
export const addFloat32: ClampedFloat32Kernel = arithmeticFloat32(Arithmetic.Add);

/** Float SUB with broadcasting, clamped to [min, max] (the fused activation). */
export const subFloat32: ClampedFloat32Kernel = arithmeticFloat32(Arithmetic.Sub);

/** Float MUL with broadcasting, clamped to [min, max] (the fused activation). */
export const mulFloat32: ClampedFloat32Kernel = arithmeticFloat32(Arithmetic.Mul);

/** Float DIV with broadcasting, clamped to [min, max] (the fused activation). */
export const divFloat32: ClampedFloat32Kernel = arithmeticFloat32(Arithmetic.Div);

/** The float arithmetic kernels by name (device kernels fall back to them). */
export const ARITHMETIC_FLOAT32 = {
  add: addFloat32,
  sub: subFloat32,
  mul: mulFloat32,
  div: divFloat32,
} as const satisfies Record<string, ClampedFloat32Kernel>;

/** Scale and zero point of a quantized tensor. */
export interface Quantization {
  scale: number;
  zeroPoint: number;
}

/**
 * Fixed-point parameters of quantized ADD (TFLite `ArithmeticParams`), with the rescaled
 * value of every input byte they determine.
 */
export interface AddQuant8Params {
  leftShift: number;
  input1Offset: number;
  input1Multiplier: number;
  /** Right shift (>= 0) applied after the multiplier. */
  input1Shift: number;
  input2Offset: number;
  input2Multiplier: number;
  input2Shift: number;
  outputOffset: number;
  outputMultiplier: number;
  outputShift: number;
  /** Input 1 byte q rescaled: `(q + input1Offset) << leftShift` times its multiplier. */
  input1Table: Int32Array;
  input2Table: Int32Array;
}

/**
 * NNAPI `QuantizeMultiplierSmallerThanOneExp`: a multiplier in (0, 1) as a Q31 value and a
 * right shift; null when out of range.
 */
export function quantizeMultiplierSmallerThanOneExp(
  real: number,
): { multiplier: number; rightShift: number } | null {
  if (!(real > 0 && real < 1)) return null;
  const q = quantizeMultiplier(real);
  if (q.shift > 0) return null;
  return { multiplier: q.multiplier, rightShift: -q.shift };
}

/**
 * The parameters NNAPI `addQuant8` derives from the scales (left shift 20, inputs rescaled
 * to twice the larger input scale); null when a multiplier is out of range (NNAPI fails).
 * Computing them builds two 256-entry tables: do it once per compilation where the
 * scales are known.
 */
export function addQuant8Params(
  input1: Quantization,
  input2: Quantization,
  output: Quantization,
): AddQuant8Params | null {
  const leftShift = 20;
  const twiceMaxInputScale = 2 * Math.max(input1.scale, input2.scale);
  const m1 = quantizeMultiplierSmallerThanOneExp(input1.scale / twiceMaxInputScale);
  const m2 = quantizeMultiplierSmallerThanOneExp(input2.scale / twiceMaxInputScale);
  // (1 << left_shift) * output.scale is a float product in C++ (exact: a power of two).
  const mOut = quantizeMultiplierSmallerThanOneExp(
    twiceMaxInputScale / Math.fround(2 ** leftShift * output.scale),
  );
  if (!m1 || !m2 || !mOut) return null;
  return {
    leftShift,
    input1Offset: -input1.zeroPoint,
    input1Multiplier: m1.multiplier,
    input1Shift: m1.rightShift,
    input2Offset: -input2.zeroPoint,
    input2Multiplier: m2.multiplier,
    input2Shift: m2.rightShift,
    outputOffset: output.zeroPoint,
    outputMultiplier: mOut.multiplier,
    outputShift: mOut.rightShift,
    input1Table: rescaleTable(-input1.zeroPoint, leftShift, m1.multiplier, m1.rightShift),
    input2Table: rescaleTable(-input2.zeroPoint, leftShift, m2.multiplier, m2.rightShift),
  };
}

/** The rescaled value of each input byte of quantized ADD (it depends on the byte only). */
function rescaleTable(
  offset: number,
  leftShift: number,
  multiplier: number,
  rightShift: number,
): Int32Array {
  const table = new Int32Array(256);
  const shifted = 2 ** leftShift;
  for (let q = 0; q < 256; q++) {
    table[q] = multiplyByQuantizedMultiplierSmallerThanOne(
      ((offset + q) * shifted) | 0,
      multiplier,
      rightShift,
    );
  }
  return table;
}

/** Quantized (uint8) ADD with broadcasting, clamped to [min, max]. */
export function addQuant8(
  a: Uint8Array,
  aShape: readonly number[],
  b: Uint8Array,
  bShape: readonly number[],
  out: Uint8Array,
  outShape: readonly number[],
  p: AddQuant8Params,
  min: number,
  max: number,
): void {
  const { input1Table: scaled1, input2Table: scaled2 } = p;
  const { outputMultiplier, outputShift, outputOffset } = p;
  forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      const rawSum = (scaled1[a[ia]] + scaled2[b[ib]]) | 0;
      const v = multiplyByQuantizedMultiplierSmallerThanOne(rawSum, outputMultiplier, outputShift) +
        outputOffset;
      out[o + i] = v < min ? min : v > max ? max : v;
    }
  });
}

/** Fixed-point parameters of quantized MUL. */
export interface MulQuant8Params {
  input1Offset: number;
  input2Offset: number;
  outputOffset: number;
  outputMultiplier: number;
  /** Right shift (>= 0) applied after the multiplier. */
  outputShift: number;
}

/**
 * The parameters NNAPI `mulQuant8` derives from the scales: one multiplier
 * input1_scale * input2_scale / output_scale, which must be below 1 (else null).
 */
export function mulQuant8Params(
  input1: Quantization,
  input2: Quantization,
  output: Quantization,
): MulQuant8Params | null {
  // C++ multiplies the two float scales in float, then divides in double.
  const inputProductScale = Math.fround(input1.scale * input2.scale);
  const m = quantizeMultiplierSmallerThanOneExp(inputProductScale / output.scale);
  if (!m) return null;
  return {
    input1Offset: -input1.zeroPoint,
    input2Offset: -input2.zeroPoint,
    outputOffset: output.zeroPoint,
    outputMultiplier: m.multiplier,
    outputShift: m.rightShift,
  };
}

/** Quantized (uint8) MUL with broadcasting, clamped to [min, max]. */
export function mulQuant8(
  a: Uint8Array,
  aShape: readonly number[],
  b: Uint8Array,
  bShape: readonly number[],
  out: Uint8Array,
  outShape: readonly number[],
  p: MulQuant8Params,
  min: number,
  max: number,
): void {
  const { input1Offset, input2Offset, outputMultiplier, outputShift, outputOffset } = p;
  forEachBroadcastRow(aShape, bShape, outShape, (ia, sa, ib, sb, o, n) => {
    for (let i = 0; i < n; i++, ia += sa, ib += sb) {
      const product = (input1Offset + a[ia]) * (input2Offset + b[ib]);
      const v =
        multiplyByQuantizedMultiplierSmallerThanOne(product, outputMultiplier, outputShift) +
        outputOffset;
      out[o + i] = v < min ? min : v > max ? max : v;
    }
  });
}
