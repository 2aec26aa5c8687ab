/**
 * This CPU's WebAssembly SIMD128 float32 peak on one core, measured: a generated loop of
 * independent f32x4 multiply-adds on registers (relaxed_madd where the engine has it, else
 * mul + add), 8 accumulators so the adds do not wait on each other.
 */
import { FunctionBuilder, ModuleBuilder } from "../../kernels/wasm_assembler.ts";

const ACCUMULATORS = 8;

function peakModule(relaxed: boolean): Uint8Array<ArrayBuffer> {
  const f = new FunctionBuilder(["i32"]);
  const [iterations] = [0];
  const [x, y] = f.locals("v128", 2);
  const acc = f.locals("v128", ACCUMULATORS);
  f.f32Const(1.0000001).f32x4Splat().localSet(x);
  f.f32Const(0.9999999).f32x4Splat().localSet(y);
  for (const a of acc) f.f32Const(0).f32x4Splat().localSet(a);
  f.loop(() => {
    for (const a of acc) {
      f.localGet(x).localGet(y);
      if (relaxed) f.localGet(a).f32x4RelaxedMadd();
      else f.f32x4Mul().localGet(a).f32x4Add();
      f.localSet(a);
    }
    f.localGet(iterations).i32Const(1).i32Sub().localTee(iterations).brIf(0);
  });
  // Keep the result observable so nothing is optimized away.
  f.i32Const(0);
  f.localGet(acc[0]);
  for (const a of acc.slice(1)) f.localGet(a).f32x4Add();
  f.v128Store(0);
  return new ModuleBuilder().export("peak", f).encode();
}

/** GFLOP/s of the best flavour this engine runs (relaxed SIMD FMA if present). */
export function simd128PeakGflops(): { gflops: number; relaxed: boolean } {
  for (const relaxed of [true, false]) {
    const bytes = peakModule(relaxed);
    if (!WebAssembly.validate(bytes)) continue;
    const memory = new WebAssembly.Memory({ initial: 1 });
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), { env: { memory } });
    const peak = instance.exports.peak as (iterations: number) => void;
    const iterations = 20_000_000;
    peak(1000);
    let best = Infinity;
    for (let r = 0; r < 5; r++) {
      const start = performance.now();
      peak(iterations);
      best = Math.min(best, performance.now() - start);
    }
    const flops = iterations * ACCUMULATORS * 4 * 2;
    return { gflops: flops / best / 1e6, relaxed };
  }
  throw new Error("this engine has no WebAssembly SIMD");
}
