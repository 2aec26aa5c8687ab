/**
 * Code generation of the quant8 kernels' output stage: int32 sums (blocks of 8 output
 * channels, from `q8gemm`, `q8conv` or `q8dwconv`) scaled by a Q31 multiplier and a power of
 * two, offset by the output zero point, clamped and stored as bytes. It is TFLite's
 * `MultiplyByQuantizedMultiplier` as `fixed_point.ts` computes it for the reference kernels,
 * four channels at a time in 64-bit lanes, with every step exact:
 * - the left shift is a multiplication by `2^left` (wrapping like the reference's `| 0`);
 * - `SaturatingRoundingDoublingHighMul(a, m)` is `(a * m + nudge) / 2^31` truncated toward
 *   zero: an arithmetic shift after adding `2^31 - 1` to a negative dividend (`m` is
 *   positive, so the saturating case never arises);
 * - `RoundingDivideByPOT(s, e)` (halves away from zero) is `floor((s + 2^(e-1) - [s < 0]) /
 *   2^e)` for `e > 0`, and a right shift by a per-channel `e` is a multiplication by
 *   `2^(31-e)` then a shift by 31 (SIMD shifts take one count for all lanes).
 * Signed outputs are computed shifted by +128 and their bytes' top bits flipped.
 */
import { FunctionBuilder } from "./wasm_assembler.ts";

/**
 * Bytes of one block's parameters: for 8 channels, the Q31 multipliers and `2^left` (int32),
 * then `2^(31-right)`, the rounding nudge `2^(right-1)` and the negative-rounding mask
 * (-1 when `right > 0`) as int64.
 */
export const REQUANTIZE_BLOCK_BYTES = 256;

const MULTIPLIERS = 0, LEFT_FACTORS = 32, RIGHT_FACTORS = 64, NUDGES = 128, MASKS = 192;

/** Byte `i` of lane pairs 0 and 2 of two i64x2 vectors: their low 32 bits, as an i32x4. */
const LOW_HALVES = [0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27];

/**
 * The four per-block parameter sets of {@link REQUANTIZE_BLOCK_BYTES} for `channels` output
 * channels; undefined when a shift is outside what the kernel reproduces (left over 31 or
 * right over 31 bits, which the reference's arithmetic wraps differently; never from a valid
 * model) or a multiplier is negative.
 */
export function requantizeParams(
  multipliers: Int32Array,
  shifts: Int32Array,
  channels: number,
): ArrayBuffer | undefined {
  const blocks = Math.ceil(channels / 8);
  const buffer = new ArrayBuffer(blocks * REQUANTIZE_BLOCK_BYTES);
  const i32 = new Int32Array(buffer), i64 = new BigInt64Array(buffer);
  for (let c = 0; c < blocks * 8; c++) {
    const base = Math.floor(c / 8) * REQUANTIZE_BLOCK_BYTES, lane = c % 8;
    const at32 = (offset: number) => (base + offset) / 4 + lane;
    const at64 = (offset: number) => (base + offset) / 8 + lane;
    if (c >= channels) {
      i64[at64(RIGHT_FACTORS)] = 1n << 31n;
      continue;
    }
    const multiplier = multipliers[c], shift = shifts[c];
    const right = shift > 0 ? 0 : -shift;
    if (shift > 31 || right > 31 || multiplier < 0) return undefined;
    i32[at32(MULTIPLIERS)] = multiplier;
    i32[at32(LEFT_FACTORS)] = 2 ** Math.max(shift, 0) | 0;
    i64[at64(RIGHT_FACTORS)] = 1n << BigInt(31 - right);
    i64[at64(NUDGES)] = right > 0 ? 1n << BigInt(right - 1) : 0n;
    i64[at64(MASKS)] = right > 0 ? -1n : 0n;
  }
  return buffer;
}

/**
 * `q8requantize(sums, sumStride, out, outStride, pixels, blocks, params, outputOffset, min,
 * max, flip)`: for each of `pixels` rows of `blocks * 8` int32 sums at `sums` (byte stride
 * `sumStride`), writes `blocks * 8` bytes at `out` (byte stride `outStride`) with the
 * parameters of {@link requantizeParams} at `params`; `flip` (0 or 0x80) is xored into every
 * byte.
 */
export function requantizeFunction(): FunctionBuilder {
  const f = new FunctionBuilder(Array(11).fill("i32"));
  const [sums, sumStride, out, outStride, pixels, blocks, params] = [0, 1, 2, 3, 4, 5, 6];
  const [outputOffset, min, max, flip] = [7, 8, 9, 10];
  const [sp, op, pp, b] = f.locals("i32", 4);
  const [vOffset, vMin, vMax, vFlip, zero, nudge, negativeNudge, truncate] = f.locals("v128", 8);
  const [a, m, product, halfLow, quarter0] = f.locals("v128", 5);
  const halves = f.locals("v128", 2);
  f.localGet(outputOffset).i32x4Splat().localSet(vOffset);
  f.localGet(min).i32x4Splat().localSet(vMin);
  f.localGet(max).i32x4Splat().localSet(vMax);
  f.localGet(flip).i8x16Splat().localSet(vFlip);
  f.i64Const(0n).i64x2Splat().localSet(zero);
  f.i64Const(1n << 30n).i64x2Splat().localSet(nudge);
  f.i64Const(1n - (1n << 31n)).i64x2Splat().localSet(negativeNudge);
  f.i64Const((1n << 31n) - 1n).i64x2Splat().localSet(truncate);

  /** Requantizes the i64x2 `product` of lanes `lane` and `lane + 1` of the block. */
  const requantizePair = (lane: number) => {
    // t = product + (product < 0 ? 1 - 2^30 : 2^30); s = t / 2^31, truncated.
    f.localGet(product).localGet(product).localGet(zero).i64x2LtS();
    f.localGet(negativeNudge).v128And().localGet(nudge).i64x2Add().i64x2Add().localSet(product);
    f.localGet(product).localGet(product).i32Const(63).i64x2ShrS().localGet(truncate).v128And();
    f.i64x2Add().i32Const(31).i64x2ShrS().localSet(product);
    // v = s + nudge_e + (s < 0 ? mask_e : 0); r = (v * 2^(31-e)) >> 31.
    f.localGet(product).localGet(pp).v128Load(NUDGES + 8 * lane).i64x2Add();
    f.localGet(product).localGet(zero).i64x2LtS().localGet(pp).v128Load(MASKS + 8 * lane);
    f.v128And().i64x2Add();
    f.localGet(pp).v128Load(RIGHT_FACTORS + 8 * lane).i64x2Mul().i32Const(31).i64x2ShrS();
  };

  f.block(() => {
    f.localGet(pixels).i32Eqz().brIf(0);
    f.localGet(blocks).i32Eqz().brIf(0);
    f.loop(() => {
      f.localGet(sums).localSet(sp);
      f.localGet(out).localSet(op);
      f.localGet(params).localSet(pp);
      f.localGet(blocks).localSet(b);
      f.loop(() => {
        for (const half of [0, 1]) {
          // a = sums * 2^left (wrapping), m = multipliers: four channels.
          f.localGet(sp).v128Load(16 * half);
          f.localGet(pp).v128Load(LEFT_FACTORS + 16 * half).i32x4Mul().localSet(a);
          f.localGet(pp).v128Load(MULTIPLIERS + 16 * half).localSet(m);
          f.localGet(a).localGet(m).i64x2ExtmulLowI32x4S().localSet(product);
          requantizePair(4 * half);
          f.localSet(halfLow);
          f.localGet(a).localGet(m).i64x2ExtmulHighI32x4S().localSet(product);
          requantizePair(4 * half + 2);
          f.localSet(quarter0);
          // The four results' low halves, + zero point, clamped.
          f.localGet(halfLow).localGet(quarter0).i8x16Shuffle(LOW_HALVES);
          f.localGet(vOffset).i32x4Add().localGet(vMin).i32x4MaxS().localGet(vMax).i32x4MinS();
          f.localSet(halves[half]);
        }
        f.localGet(op);
        f.localGet(halves[0]).localGet(halves[1]).i16x8NarrowI32x4S().localTee(a).localGet(a);
        f.i8x16NarrowI16x8U().localGet(vFlip).v128Xor().v128Store64Lane(0, 0);
        f.localGet(sp).i32Const(32).i32Add().localSet(sp);
        f.localGet(op).i32Const(8).i32Add().localSet(op);
        f.localGet(pp).i32Const(REQUANTIZE_BLOCK_BYTES).i32Add().localSet(pp);
        f.localGet(b).i32Const(1).i32Sub().localTee(b).brIf(0);
      });
      f.localGet(sums).localGet(sumStride).i32Add().localSet(sums);
      f.localGet(out).localGet(outStride).i32Add().localSet(out);
      f.localGet(pixels).i32Const(1).i32Sub().localTee(pixels).brIf(0);
    });
  });
  return f;
}
