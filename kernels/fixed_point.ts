/**
 * Integer fixed-point arithmetic of gemmlowp / TFLite as the Android NNAPI reference CPU
 * implementation uses it for quantized kernels. Every function reproduces the C++ integer
 * semantics exactly (64-bit intermediate products, rounding, saturation) with JS numbers.
 */

const TWO_POW_31 = 2147483648;
const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;

/** C++ `std::round`: halves away from zero. */
export function roundHalfAwayFromZero(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/**
 * gemmlowp `SaturatingRoundingDoublingHighMul`: the high 32 bits of 2*a*b, rounded to
 * nearest, computed exactly although a*b needs 62 bits.
 */
export function saturatingRoundingDoublingHighMul(a: number, b: number): number {
  if (a === INT32_MIN && b === INT32_MIN) return INT32_MAX;
  const nonNegative = a === 0 || b === 0 || (a > 0) === (b > 0);
  const nudge = nonNegative ? 1073741824 : -1073741823;
  // a*b = a*bHigh*2^16 + a*bLow, each part exact in a double.
  const bLow = b & 0xffff;
  const bHigh = (b - bLow) / 65536;
  const p1 = a * bHigh;
  const p0 = a * bLow;
  const q1 = Math.floor(p1 / 32768);
  const r1 = p1 - q1 * 32768;
  const s = r1 * 65536 + p0 + nudge;
  const sHigh = Math.floor(s / TWO_POW_31);
  const rem = s - sHigh * TWO_POW_31;
  const floorQuotient = q1 + sHigh;
  // C++ integer division truncates toward zero.
  return floorQuotient < 0 && rem !== 0 ? floorQuotient + 1 : floorQuotient;
}

/** gemmlowp `RoundingDivideByPOT`: x / 2^exponent, rounded to nearest, ties away from zero. */
export function roundingDivideByPOT(x: number, exponent: number): number {
  if (exponent === 0) return x;
  const mask = exponent >= 31 ? INT32_MAX : (1 << exponent) - 1;
  const remainder = x & mask;
  const threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/** TFLite `MultiplyByQuantizedMultiplierSmallerThanOneExp` with a right shift >= 0. */
export function multiplyByQuantizedMultiplierSmallerThanOne(
  x: number,
  multiplier: number,
  rightShift: number,
): number {
  return roundingDivideByPOT(saturatingRoundingDoublingHighMul(x, multiplier), rightShift);
}

/** TFLite `MultiplyByQuantizedMultiplierGreaterThanOne` with a left shift >= 0. */
export function multiplyByQuantizedMultiplierGreaterThanOne(
  x: number,
  multiplier: number,
  leftShift: number,
): number {
  return saturatingRoundingDoublingHighMul((x * 2 ** leftShift) | 0, multiplier);
}

/**
 * TFLite `MultiplyByQuantizedMultiplier` with a signed shift (positive: left), as produced by
 * {@link quantizeMultiplier}.
 */
export function multiplyByQuantizedMultiplier(
  x: number,
  multiplier: number,
  shift: number,
): number {
  const leftShift = shift > 0 ? shift : 0;
  const rightShift = shift > 0 ? 0 : -shift;
  return roundingDivideByPOT(
    saturatingRoundingDoublingHighMul((x * 2 ** leftShift) | 0, multiplier),
    rightShift,
  );
}

/** C `frexp`: x = mantissa * 2^exponent with mantissa in [0.5, 1). */
export function frexp(x: number): { mantissa: number; exponent: number } {
  if (x === 0 || !Number.isFinite(x)) return { mantissa: x, exponent: 0 };
  const abs = Math.abs(x);
  let exponent = Math.floor(Math.log2(abs)) + 1;
  let mantissa = abs / 2 ** exponent;
  if (mantissa >= 1) {
    mantissa /= 2;
    exponent++;
  } else if (mantissa < 0.5) {
    mantissa *= 2;
    exponent--;
  }
  return { mantissa: x < 0 ? -mantissa : mantissa, exponent };
}

/** A real multiplier as a Q31 integer and a power-of-two shift. */
export interface QuantizedMultiplier {
  multiplier: number;
  shift: number;
}

function toQ31(realMultiplier: number): QuantizedMultiplier {
  if (realMultiplier === 0) return { multiplier: 0, shift: 0 };
  const { mantissa, exponent } = frexp(realMultiplier);
  let qFixed = roundHalfAwayFromZero(mantissa * TWO_POW_31);
  let shift = exponent;
  if (qFixed === TWO_POW_31) {
    qFixed /= 2;
    shift++;
  }
  return { multiplier: qFixed, shift };
}

/** TFLite `QuantizeMultiplier`: any positive real multiplier; `shift` is signed (left > 0). */
export function quantizeMultiplier(realMultiplier: number): QuantizedMultiplier {
  return toQ31(realMultiplier);
}

/**
 * NNAPI `QuantizeMultiplierSmallerThanOne`: multiplier in [0, 1); returns a right shift
 * (`shift` >= 0). Returns null when the multiplier is out of range.
 */
export function quantizeMultiplierSmallerThanOne(
  realMultiplier: number,
): QuantizedMultiplier | null {
  if (!(realMultiplier >= 0 && realMultiplier < 1)) return null;
  const q = toQ31(realMultiplier);
  const rightShift = -q.shift;
  if (rightShift < 0) return null;
  return { multiplier: q.multiplier, shift: rightShift };
}

/**
 * NNAPI `QuantizeMultiplierGreaterThanOne`: multiplier > 1; returns a left shift
 * (`shift` >= 0). Returns null when the multiplier is out of range.
 */
export function quantizeMultiplierGreaterThanOne(
  realMultiplier: number,
): QuantizedMultiplier | null {
  if (!(realMultiplier > 1)) return null;
  const q = toQ31(realMultiplier);
  if (q.shift < 0) return null;
  return q;
}

/** Clamp to the int32 range (C++ saturating casts). */
export function saturateInt32(x: number): number {
  return x > INT32_MAX ? INT32_MAX : x < INT32_MIN ? INT32_MIN : x;
}

/** Clamp to [lo, hi]. */
export function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

/** Inclusive output range of a fused activation. */
export interface ActivationRange {
  min: number;
  max: number;
}

/** NNAPI `CalculateActivationRangeFloat` for fuse codes NONE/RELU/RELU1/RELU6. */
export function activationRangeFloat(activation: number): ActivationRange {
  switch (activation) {
    case 1:
      return { min: 0, max: Infinity };
    case 2:
      return { min: -1, max: 1 };
    case 3:
      return { min: 0, max: 6 };
    default:
      return { min: -Infinity, max: Infinity };
  }
}

/**
 * NNAPI `CalculateActivationRangeUint8` (and its int8 twin with other qmin/qmax): quantizes
 * the activation's real bounds with the output's scale and zero point.
 */
export function activationRangeQuantized(
  activation: number,
  scale: number,
  zeroPoint: number,
  qmin = 0,
  qmax = 255,
): ActivationRange {
  const quantize = (f: number) => zeroPoint + roundHalfAwayFromZero(Math.fround(f / scale));
  switch (activation) {
    case 1:
      return { min: Math.max(qmin, quantize(0)), max: qmax };
    case 2:
      return { min: Math.max(qmin, quantize(-1)), max: Math.min(qmax, quantize(1)) };
    case 3:
      return { min: Math.max(qmin, quantize(0)), max: Math.min(qmax, quantize(6)) };
    default:
      return { min: qmin, max: qmax };
  }
}
