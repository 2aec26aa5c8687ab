/**
 * Code generation of the quant8 kernels' output stage: int32 sums (one per output channel,
 * from `q8gemm`, `q8conv` or `q8dwconv`) scaled by a Q31 multiplier and a power of two, offset
 * by the output zero point, clamped and stored as bytes. It is TFLite's
 * `MultiplyByQuantizedMultiplier` as `fixed_point.ts` computes it for the reference kernels,
 * in 64-bit integers: the same bits for every sum.
 */
import { FunctionBuilder } from "./wasm_assembler.ts";

/** Bytes of one channel's parameters: multiplier, left shift, right shift, rounding mask. */
export const REQUANTIZE_PARAM_BYTES = 16;

/**
 * `q8requantize(acc, accStride, out, outStride, pixels, channels, params, outputOffset, min,
 * max)`: for each of `pixels` rows of int32 sums at `acc` (byte stride `accStride`), writes
 * `channels` bytes at `out` (byte stride `outStride`); channel `c` uses the four int32 at
 * `params + 16c`.
 */
export function requantizeFunction(): FunctionBuilder {
  const f = new FunctionBuilder(Array(10).fill("i32"));
  const [acc, accStride, out, outStride, pixels, channels, params, outputOffset, min, max] = [
    0,
    1,
    2,
    3,
    4,
    5,
    6,
    7,
    8,
    9,
  ];
  const [ap, op, pp, c, x, mask] = f.locals("i32", 6);
  const product = f.local("i64");
  f.block(() => {
    f.localGet(pixels).i32Eqz().brIf(0);
    f.localGet(channels).i32Eqz().brIf(0);
    f.loop(() => {
      f.localGet(acc).localSet(ap);
      f.localGet(out).localSet(op);
      f.localGet(params).localSet(pp);
      f.localGet(channels).localSet(c);
      f.loop(() => {
        // x = (acc << leftShift) * multiplier, exact in 64 bits.
        f.localGet(ap).i32Load(0).localGet(pp).i32Load(4).i32Shl().i64ExtendI32S();
        f.localGet(pp).i32Load(0).i64ExtendI32S().i64Mul().localSet(product);
        // SaturatingRoundingDoublingHighMul: (product + nudge) / 2^31, truncated.
        f.localGet(product);
        f.i64Const(-1073741823n).i64Const(1073741824n);
        f.localGet(product).i64Const(0n).i64LtS().select();
        f.i64Add().i64Const(2147483648n).i64DivS().i32WrapI64().localSet(x);
        // RoundingDivideByPOT: x >> rightShift, rounded half away from zero.
        f.localGet(pp).i32Load(12).localSet(mask);
        f.localGet(x).localGet(pp).i32Load(8).i32ShrS();
        f.localGet(x).localGet(mask).i32And();
        f.localGet(mask).i32Const(1).i32ShrS().localGet(x).i32Const(0).i32LtS().i32Add();
        f.i32GtS().i32Add();
        // + zero point, clamped to [min, max].
        f.localGet(outputOffset).i32Add().localSet(x);
        f.localGet(min).localGet(x).localGet(x).localGet(min).i32LtS().select().localSet(x);
        f.localGet(max).localGet(x).localGet(x).localGet(max).i32GtS().select().localSet(x);
        f.localGet(op).localGet(x).i32Store8(0);
        f.localGet(ap).i32Const(4).i32Add().localSet(ap);
        f.localGet(op).i32Const(1).i32Add().localSet(op);
        f.localGet(pp).i32Const(REQUANTIZE_PARAM_BYTES).i32Add().localSet(pp);
        f.localGet(c).i32Const(1).i32Sub().localTee(c).brIf(0);
      });
      f.localGet(acc).localGet(accStride).i32Add().localSet(acc);
      f.localGet(out).localGet(outStride).i32Add().localSet(out);
      f.localGet(pixels).i32Const(1).i32Sub().localTee(pixels).brIf(0);
    });
  });
  return f;
}
