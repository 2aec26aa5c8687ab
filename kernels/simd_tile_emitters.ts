/**
 * The building blocks of the WebAssembly SIMD kernels' code (`f32_simd_codegen.ts`): a tile's
 * multiply-adds for each arithmetic, its accumulators' loads and stores, the k loop over a
 * packed block, the loop over full tiles then single items, and a kernel's signature.
 */
import { F32_BLOCK } from "./f32_packing.ts";
import { FunctionBuilder } from "./wasm_assembler.ts";

/** Bytes of one packed block row (8 floats, two vectors). */
export const BLOCK_BYTES = F32_BLOCK * 4;
/** Output pixels per full tile. */
export const TILE = 4;

/**
 * What a kernel's multiply-add does: float32 (`relaxed`: fused where the CPU can), or the
 * quant8 kernels' exact int32 arithmetic on pairs of int16 (`i16dot`) or on int32 (`i32mul`).
 */
export type Arithmetic = "f32" | "relaxed" | "i16dot" | "i32mul";

/** Code generation state of one function. */
export interface Emitter {
  f: FunctionBuilder;
  arithmetic: Arithmetic;
}

function isInteger(arithmetic: Arithmetic): boolean {
  return arithmetic === "i16dot" || arithmetic === "i32mul";
}

/** `local += value` where `value` is pushed by `push`. */
export function addTo(f: FunctionBuilder, local: number, push: () => void): void {
  f.localGet(local);
  push();
  f.i32Add().localSet(local);
}

/** `local += other * factor`. */
export function addScaled(f: FunctionBuilder, local: number, other: number, factor: number): void {
  addTo(f, local, () => {
    f.localGet(other);
    if (factor !== 1) f.i32Const(factor).i32Mul();
  });
}

/** Ends a do-while loop body: `if (--counter !== 0) continue`. */
export function repeatWhileCounting(f: FunctionBuilder, counter: number): void {
  f.localGet(counter).i32Const(1).i32Sub().localTee(counter).brIf(0);
}

/** `acc = x * w + acc`, with `x` pushed by `pushX`. */
export function madd(e: Emitter, pushX: () => void, w: number, acc: number): void {
  const { f } = e;
  pushX();
  f.localGet(w);
  switch (e.arithmetic) {
    case "relaxed":
      f.localGet(acc).f32x4RelaxedMadd();
      break;
    case "f32":
      f.f32x4Mul().localGet(acc).f32x4Add();
      break;
    case "i16dot":
      f.i32x4DotI16x8S().localGet(acc).i32x4Add();
      break;
    case "i32mul":
      f.i32x4Mul().localGet(acc).i32x4Add();
  }
  f.localSet(acc);
}

/**
 * Stores `clamp(acc)` (float32) or `acc` (the quant8 kernels' int32 sums) at the address
 * pushed by `pushAddress` plus `offset`.
 */
export function storeAccumulator(
  e: Emitter,
  pushAddress: () => void,
  offset: number,
  acc: number,
  clamp: { vmin: number; vmax: number },
): void {
  const { f } = e;
  pushAddress();
  f.localGet(acc);
  if (!isInteger(e.arithmetic)) {
    f.localGet(clamp.vmin).f32x4Pmax().localGet(clamp.vmax).f32x4Pmin();
  }
  f.v128Store(offset);
}

/** Loads a block's 8 biases at `wp` into the accumulators of `tile` pixels; `wp += 32`. */
export function loadBias(f: FunctionBuilder, wp: number, acc: number[], tile: number): void {
  f.localGet(wp).v128Load(0).localSet(acc[0]);
  f.localGet(wp).v128Load(16).localSet(acc[1]);
  for (let r = 1; r < tile; r++) {
    f.localGet(acc[0]).localSet(acc[2 * r]);
    f.localGet(acc[1]).localSet(acc[2 * r + 1]);
  }
  addTo(f, wp, () => f.i32Const(BLOCK_BYTES));
}

/**
 * The k loop of a GEMM-layout tile: `k` steps, each splats one float per pixel (at
 * `pa[r]`, advancing 4 bytes) and multiplies it by the 8 weights at `wp` (advancing 32).
 * Every tile size adds the products of a pixel in the same order (k ascending into one
 * accumulator pair), so a pixel's result does not depend on the tile it falls in: a row
 * answers the same bits alone as in a batch (dynamic batching stacks executions' rows).
 */
export function emitDotLoop(
  e: Emitter,
  l: { wp: number; k: number; w0: number; w1: number; x: number },
  pa: number[],
  acc: number[],
  tile: number,
): void {
  const { f } = e;
  f.loop(() => {
    f.localGet(l.wp).v128Load(0).localSet(l.w0);
    f.localGet(l.wp).v128Load(16).localSet(l.w1);
    for (let r = 0; r < tile; r++) {
      f.localGet(pa[r]).v128Load32Splat(0).localSet(l.x);
      madd(e, () => f.localGet(l.x), l.w0, acc[2 * r]);
      madd(e, () => f.localGet(l.x), l.w1, acc[2 * r + 1]);
      addTo(f, pa[r], () => f.i32Const(4));
    }
    addTo(f, l.wp, () => f.i32Const(BLOCK_BYTES));
    repeatWhileCounting(f, l.k);
  });
}

/**
 * Emits `for (remaining = count; ...)` over full tiles of {@link TILE} then single items:
 * `body(tile)` handles one tile, `advance(tile)` moves the pointers past it.
 */
export function emitTiled(
  f: FunctionBuilder,
  remaining: number,
  body: (tile: number) => void,
  advance: (tile: number) => void,
): void {
  const step = (tile: number) => {
    body(tile);
    advance(tile);
    f.localGet(remaining).i32Const(tile).i32Sub().localSet(remaining);
    f.br(0);
  };
  f.block(() => {
    f.block(() => {
      f.loop(() => {
        f.localGet(remaining).i32Const(TILE).i32LtU().brIf(1);
        step(TILE);
      });
    });
    f.loop(() => {
      f.localGet(remaining).i32Eqz().brIf(1);
      step(1);
    });
  });
}

/**
 * A kernel function taking the named i32 parameters then the clamp bounds `min` and `max`
 * (f32); `p` maps each name to its local index.
 */
export function kernelFunction<Name extends string>(
  names: readonly Name[],
): { f: FunctionBuilder; p: Record<Name | "min" | "max", number> } {
  const f = new FunctionBuilder([...names.map(() => "i32" as const), "f32", "f32"]);
  const p = {} as Record<Name | "min" | "max", number>;
  [...names, "min" as const, "max" as const].forEach((name, i) => p[name] = i);
  return { f, p };
}
