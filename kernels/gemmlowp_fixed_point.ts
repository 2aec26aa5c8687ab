/**
 * gemmlowp `FixedPoint<int32, IntegerBits>` arithmetic (fixedpoint.h) and the TFLite helpers
 * built on it, as the Android NNAPI CPU reference uses them for quantized SOFTMAX, LOGISTIC,
 * TANH and L2_NORMALIZATION. A fixed-point value is its raw int32 held in a JS number; the
 * number of integer bits is passed explicitly where the C++ templates carry it in the type.
 * Every function reproduces the C++ integer results bit for bit (int32 wrap-around where the
 * C++ code relies on it, saturation where gemmlowp saturates).
 */
import {
  multiplyByQuantizedMultiplierSmallerThanOne,
  roundingDivideByPOT,
  saturatingRoundingDoublingHighMul,
} from "./fixed_point.ts";

const INT32_MAX = 2147483647;
const INT32_MIN = -2147483648;

/** Raw value of 1.0 in a format with `integerBits` integer bits (`FixedPoint::One()`). */
export function fixedOne(integerBits: number): number {
  return integerBits === 0 ? INT32_MAX : 1 << (31 - integerBits);
}

/** Fixed-point product (`operator*`): the integer bits of the operands add up. */
export function fixedMul(a: number, b: number): number {
  return saturatingRoundingDoublingHighMul(a, b);
}

/** gemmlowp `RoundingHalfSum`: (a + b) / 2 rounded to nearest, ties away from zero. */
export function roundingHalfSum(a: number, b: number): number {
  const sum = a + b;
  return Math.trunc((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/**
 * gemmlowp `SaturatingRoundingMultiplyByPOT<exponent>`: a saturating left shift for a
 * positive exponent, a rounding right shift for a negative one.
 */
export function saturatingRoundingMultiplyByPOT(x: number, exponent: number): number {
  if (exponent === 0) return x;
  if (exponent < 0) return roundingDivideByPOT(x, -exponent);
  const threshold = 2 ** (31 - exponent) - 1;
  if (x > threshold) return INT32_MAX;
  if (x < -threshold) return INT32_MIN;
  return x * 2 ** exponent;
}

/** gemmlowp `Rescale<dstIntegerBits>` of a value with `srcIntegerBits` integer bits. */
export function rescale(x: number, srcIntegerBits: number, dstIntegerBits: number): number {
  return saturatingRoundingMultiplyByPOT(x, srcIntegerBits - dstIntegerBits);
}

/** exp(a) for a in [-1/4, 0), both in Q0.31. */
export function expOnIntervalBetweenNegativeOneQuarterAnd0Excl(a: number): number {
  const constantTerm = 1895147668; // exp(-1/8)
  const constantOneThird = 715827883;
  // Taylor expansion around -1/8: x = a + 1/8.
  const x = (a + (1 << 28)) | 0;
  const x2 = fixedMul(x, x);
  const x3 = fixedMul(x2, x);
  const x4 = fixedMul(x2, x2);
  const x4Over4 = roundingDivideByPOT(x4, 2);
  const poly = roundingDivideByPOT((fixedMul((x4Over4 + x3) | 0, constantOneThird) + x2) | 0, 1);
  return (constantTerm + fixedMul(constantTerm, (x + poly) | 0)) | 0;
}

/** Multipliers exp(-2^k) in Q0.31 for k = -2..4, the barrel shifter of exp_on_negative_values. */
const EXP_BARREL: readonly (readonly [number, number])[] = [
  [-2, 1672461947],
  [-1, 1302514674],
  [0, 790015084],
  [1, 290630308],
  [2, 39332535],
  [3, 720401],
  [4, 242],
];

/** gemmlowp `exp_on_negative_values`: exp(a) in Q0.31 for a <= 0 with `integerBits` bits. */
export function expOnNegativeValues(a: number, integerBits: number): number {
  const fractionalBits = 31 - integerBits;
  const oneQuarter = 1 << (fractionalBits - 2);
  const mask = oneQuarter - 1;
  const aModQuarterMinusOneQuarter = ((a & mask) - oneQuarter) | 0;
  let result = expOnIntervalBetweenNegativeOneQuarterAnd0Excl(
    rescale(aModQuarterMinusOneQuarter, integerBits, 0),
  );
  const remainder = (aModQuarterMinusOneQuarter - a) | 0;
  for (const [exponent, multiplier] of EXP_BARREL) {
    if (integerBits > exponent && (remainder & (1 << (fractionalBits + exponent))) !== 0) {
      result = fixedMul(result, multiplier);
    }
  }
  if (integerBits > 5 && a < -(2 ** (36 - integerBits))) result = 0;
  return a === 0 ? INT32_MAX : result;
}

/** Newton-Raphson 1/(1 + a) in Q2.29 for a in (0, 1) (shared by the two divisions below). */
function reciprocalOfOnePlusX(a: number): number {
  const halfDenominator = roundingHalfSum(a, INT32_MAX);
  const constant48Over17 = 1515870810;
  const constantNeg32Over17 = -1010580540;
  const one = 1 << 29;
  let x = (constant48Over17 + fixedMul(halfDenominator, constantNeg32Over17)) | 0;
  for (let i = 0; i < 3; i++) {
    const halfDenominatorTimesX = fixedMul(halfDenominator, x);
    const oneMinusHalfDenominatorTimesX = (one - halfDenominatorTimesX) | 0;
    x = (x + rescale(fixedMul(x, oneMinusHalfDenominatorTimesX), 4, 2)) | 0;
  }
  return x;
}

/** gemmlowp `one_over_one_plus_x_for_x_in_0_1`: 1/(1 + a) for a in (0, 1), Q0.31. */
export function oneOverOnePlusXForXIn01(a: number): number {
  // ExactMulByPot<-1> makes the Q2.29 value a Q1.30 one; Rescale<0> shifts it to Q0.31.
  return rescale(reciprocalOfOnePlusX(a), 1, 0);
}

/** gemmlowp `one_minus_x_over_one_plus_x_for_x_in_0_1`: (1 - a)/(1 + a), Q0.31. */
export function oneMinusXOverOnePlusXForXIn01(a: number): number {
  return rescale((reciprocalOfOnePlusX(a) - (1 << 29)) | 0, 2, 0);
}

/** gemmlowp `tanh` of a value with `integerBits` integer bits; the result is Q0.31. */
export function fixedTanh(a: number, integerBits: number): number {
  if (a === 0) return 0;
  const negative = a < 0;
  const n = negative ? a : -a | 0;
  // neg_tanh_on_negative_values: ExactMulByPot<1> doubles the value by adding an integer bit.
  const t = oneMinusXOverOnePlusXForXIn01(expOnNegativeValues(n, integerBits + 1));
  return negative ? -t | 0 : t;
}

/** gemmlowp `logistic` of a value with `integerBits` integer bits; the result is Q0.31. */
export function fixedLogistic(a: number, integerBits: number): number {
  if (a === 0) return 1 << 30;
  const positive = a > 0;
  const absInput = positive ? a : -a | 0;
  const resultIfPositive = oneOverOnePlusXForXIn01(expOnNegativeValues(-absInput | 0, integerBits));
  return positive ? resultIfPositive : (INT32_MAX - resultIfPositive) | 0;
}

/** NNAPI `CalculateInputRadius`: the largest input magnitude whose rescaled value fits. */
export function calculateInputRadius(inputIntegerBits: number, inputLeftShift: number): number {
  const maxInputRescaled = (2 ** inputIntegerBits - 1) * 2 ** (31 - inputIntegerBits) /
    2 ** inputLeftShift;
  return Math.floor(maxInputRescaled);
}

/** TFLite `MultiplyByQuantizedMultiplierSmallerThanOneExp` with a signed (left) shift <= 0. */
export function multiplyByQuantizedMultiplierSmallerThanOneExp(
  x: number,
  multiplier: number,
  leftShift: number,
): number {
  return multiplyByQuantizedMultiplierSmallerThanOne(x, multiplier, -leftShift);
}

/** A reciprocal as a Q0.31 scale and the number of bits the divisor had above 1.0. */
export interface Reciprocal {
  scale: number;
  numBitsOverUnit: number;
}

/**
 * TFLite `GetReciprocal`: 1/x for a positive x with `integerDigits` integer bits, as a
 * Q0.31 scale to be shifted right by `numBitsOverUnit` more bits.
 */
export function getReciprocal(x: number, integerDigits: number): Reciprocal {
  const headroomPlusOne = Math.clz32(x);
  const numBitsOverUnit = integerDigits - headroomPlusOne;
  const shiftedSumMinusOne = ((x << headroomPlusOne) - INT32_MIN) | 0;
  return { scale: oneOverOnePlusXForXIn01(shiftedSumMinusOne), numBitsOverUnit };
}

/** An inverse square root as a Q0.31 multiplier and a signed (left) shift. */
export interface InvSqrt {
  multiplier: number;
  shift: number;
}

/**
 * TFLite `GetInvSqrtQuantizedMultiplierExp` (the 2019 version Android 10 ships: no special
 * case for inputs <= 1): 1/sqrt(input) as a multiplier and a shift; `reverseShift` = -1
 * turns the right shift into a left one as NNAPI requests.
 */
export function getInvSqrtQuantizedMultiplierExp(input: number, reverseShift: number): InvSqrt {
  let shift = 11;
  while (input >= 1 << 29) {
    input = Math.trunc(input / 4);
    shift++;
  }
  const maxLeftShiftBits = Math.clz32(input) - 1;
  const leftShiftBitPairs = Math.floor(maxLeftShiftBits / 2) - 1;
  shift -= leftShiftBitPairs;
  input = (input * 2 ** (2 * leftShiftBitPairs)) | 0;
  // Newton-Raphson in Q3.28 from the starting guess 1.
  const fixedInput = input >> 1;
  const halfInput = roundingDivideByPOT(fixedInput, 1);
  const halfThree = (1 << 28) + (1 << 27);
  let x = 1 << 28;
  for (let i = 0; i < 5; i++) {
    const x3 = rescale(fixedMul(fixedMul(x, x), x), 9, 3);
    x = rescale((fixedMul(halfThree, x) - fixedMul(halfInput, x3)) | 0, 6, 3);
  }
  const halfSqrt2 = 1518500250;
  let multiplier = fixedMul(x, halfSqrt2);
  if (shift < 0) {
    multiplier = (multiplier * 2 ** -shift) | 0;
    shift = 0;
  }
  return { multiplier, shift: (shift * reverseShift) | 0 };
}
