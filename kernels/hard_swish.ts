/**
 * HARD_SWISH kernels: `x * relu6(x + 3) / 6` in float32, and the quantized form of NNAPI
 * 1.3 (TFLite's reference `HardSwish` with 16-bit fixed-point multipliers), reproduced
 * bit-exactly with int16 C++ semantics. A quantized result depends only on the input byte,
 * so the quantized form is a 256-entry table built once per quantization.
 */
import { frexp, roundHalfAwayFromZero } from "./fixed_point.ts";

/** HARD_SWISH on float32: `in * min(6, max(0, in + 3)) / 6`, each step rounded to float32. */
export function hardSwishFloat32(input: Float32Array, out: Float32Array): void {
  for (let i = 0; i < out.length; i++) {
    const x = input[i];
    const relu6 = Math.min(6, Math.max(0, Math.fround(x + 3)));
    out[i] = Math.fround(x * relu6) / 6;
  }
}

const INT16_MAX = 32767;
const INT16_MIN = -32768;

/** C++ conversion to int16_t (two's complement wrap). */
function toInt16(x: number): number {
  return (x << 16) >> 16;
}

function saturateInt16(x: number): number {
  return x > INT16_MAX ? INT16_MAX : x < INT16_MIN ? INT16_MIN : x;
}

/** gemmlowp `SaturatingRoundingDoublingHighMul` on int16. */
function roundingDoublingHighMul16(a: number, b: number): number {
  if (a === INT16_MIN && b === INT16_MIN) return INT16_MAX;
  const ab = a * b;
  const nudge = ab >= 0 ? 1 << 14 : 1 - (1 << 14);
  return toInt16(Math.trunc((ab + nudge) / 32768));
}

/** TFLite `SaturatingDoublingHighMul` on int16: truncating, no rounding nudge. */
function doublingHighMul16(a: number, b: number): number {
  if (a === INT16_MIN && b === INT16_MIN) return INT16_MAX;
  return toInt16(Math.trunc((a * b) / 32768));
}

/** gemmlowp `RoundingDivideByPOT` on int16 (the mask truncated to int16 as C++ does). */
function roundingDivideByPOT16(x: number, exponent: number): number {
  const mask = toInt16(2 ** exponent - 1);
  const remainder = toInt16(x & mask);
  const threshold = toInt16((mask >> 1) + (x < 0 ? 1 : 0));
  return toInt16((x >> exponent) + (remainder > threshold ? 1 : 0));
}

/** TFLite `SaturatingLeftShift` on int16. */
function saturatingLeftShift16(x: number, amount: number): number {
  return saturateInt16(x * 2 ** amount);
}

/** A Q15 multiplier and its power-of-two exponent (positive: left shift). */
interface Int16Multiplier {
  multiplier: number;
  exponent: number;
}

/**
 * NNAPI `QuantizeMultiplier` (tiny multipliers flushed to zero) followed by TFLite
 * `DownScaleInt32ToInt16Multiplier`.
 */
function int16Multiplier(real: number): Int16Multiplier {
  if (real === 0) return { multiplier: 0, exponent: 0 };
  const { mantissa, exponent: e } = frexp(real);
  let q = roundHalfAwayFromZero(mantissa * 2 ** 31);
  let exponent = e;
  if (q === 2 ** 31) {
    q /= 2;
    exponent++;
  }
  if (exponent < -31) return { multiplier: 0, exponent: 0 };
  const rounding = 1 << 15;
  const multiplier = q >= 2147483647 - rounding ? INT16_MAX : Math.floor((q + rounding) / 65536);
  return { multiplier, exponent };
}

/** The parameters of quantized HARD_SWISH for one input and output quantization. */
export interface HardSwishQuantParams {
  inputZeroPoint: number;
  outputZeroPoint: number;
  reluish: Int16Multiplier;
  output: Int16Multiplier;
}

/**
 * The fixed-point parameters of quantized HARD_SWISH, or null when the output multiplier
 * (input scale / 128 / output scale) is not below one, which NNAPI rejects at execution.
 */
export function hardSwishQuantParams(
  input: { scale: number; zeroPoint: number },
  output: { scale: number; zeroPoint: number },
): HardSwishQuantParams | null {
  const hiresInputScale = Math.fround(Math.fround(1 / 128) * Math.fround(input.scale));
  const reluishScale = Math.fround(3 / 32768);
  const outputMultiplier = int16Multiplier(
    Math.fround(hiresInputScale / Math.fround(output.scale)),
  );
  if (outputMultiplier.exponent > 0) return null;
  return {
    inputZeroPoint: input.zeroPoint,
    outputZeroPoint: output.zeroPoint,
    reluish: int16Multiplier(Math.fround(hiresInputScale / reluishScale)),
    output: outputMultiplier,
  };
}

/** Quantized HARD_SWISH of one stored value, clamped to [lo, hi] (the storage type's range). */
function hardSwishQuantValue(q: number, p: HardSwishQuantParams, lo: number, hi: number): number {
  const inputValue = toInt16(q - p.inputZeroPoint);
  const hires = toInt16(inputValue * 128);
  const preshiftOutput = roundingDoublingHighMul16(hires, p.output.multiplier);
  let reluish = hires;
  const e = p.reluish.exponent;
  if (e > 0) reluish = saturatingLeftShift16(reluish, e - 1);
  reluish = roundingDoublingHighMul16(reluish, p.reluish.multiplier);
  if (e > 0) reluish = saturatingLeftShift16(reluish, 1);
  if (e < 0) reluish = roundingDivideByPOT16(reluish, -e);
  reluish = toInt16((reluish + (1 << 15)) >> 1);
  const preshift = doublingHighMul16(reluish, preshiftOutput);
  let value = roundingDivideByPOT16(preshift, -p.output.exponent);
  value = toInt16(value + p.outputZeroPoint);
  return Math.max(lo, Math.min(hi, value));
}

/** The 256-entry table of quantized HARD_SWISH, indexed by the stored byte (uint8 view). */
export function hardSwishQuantTable(p: HardSwishQuantParams, signed: boolean): Uint8Array {
  const table = new Uint8Array(256);
  for (let byte = 0; byte < 256; byte++) {
    const q = signed ? (byte << 24) >> 24 : byte;
    const value = signed ? hardSwishQuantValue(q, p, -128, 127) : hardSwishQuantValue(q, p, 0, 255);
    table[byte] = value & 0xff;
  }
  return table;
}

/** Maps every byte through `table` (uint8 views of quant8 or quant8-signed data). */
export function lookupBytes(input: Uint8Array, table: Uint8Array, out: Uint8Array): void {
  for (let i = 0; i < out.length; i++) out[i] = table[input[i]];
}
