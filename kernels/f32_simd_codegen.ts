/**
 * Code generation of the WebAssembly SIMD convolution kernels (`wasm_assembler.ts`): each
 * kernel keeps a tile of 1-4 output pixels x 8 output channels in eight 4-lane accumulators
 * and streams the packed block (`f32_packing.ts`, `q8_packing.ts`) once per tile.
 *
 * One loop structure serves every arithmetic ({@link Arithmetic}): float32 kernels clamp with
 * `pmin`/`pmax`, which keep NaN like the reference's comparisons do, and the `relaxedsimd`
 * flavour multiplies and adds with `f32x4.relaxed_madd` (fused where the CPU has FMA). The
 * quant8 kernels accumulate exact int32 sums (wrapping like the C++ accumulator) and store
 * them unclamped for the requantization pass (`q8_requantize_codegen.ts`): `i16dot` takes
 * pairs of 16-bit values along the depth (`i32x4.dot_i16x8_s`), `i32mul` one 32-bit value
 * per channel (depthwise).
 */
import { requantizeFunction } from "./q8_requantize_codegen.ts";
import { elementwiseFunctions } from "./f32_elementwise_codegen.ts";
import { type FunctionBuilder, ModuleBuilder } from "./wasm_assembler.ts";
import {
  addScaled,
  addTo,
  type Arithmetic,
  BLOCK_BYTES,
  emitDotLoop,
  type Emitter,
  emitTiled,
  kernelFunction,
  loadBias,
  madd,
  repeatWhileCounting,
  storeAccumulator,
  TILE,
} from "./simd_tile_emitters.ts";

/**
 * `gemm(rows, depth, blocks, a, aStride, w, out, outStride, min, max)`: rows of `depth`
 * floats at `a` (byte stride `aStride`) times the GEMM-layout weights at `w`, into rows
 * of `blocks * 8` floats at `out` (byte stride `outStride`). Tiles of 4 x 8.
 */
function gemmFunction(arithmetic: Arithmetic): FunctionBuilder {
  const { f, p } = kernelFunction(
    ["rows", "depth", "blocks", "a", "aStride", "w", "out", "outStride"] as const,
  );
  const e = { f, arithmetic };
  const { rows, depth, blocks, a, aStride, w, out, outStride, min, max } = p;
  const [vmin, vmax, w0, w1, x] = f.locals("v128", 5);
  const acc = f.locals("v128", 2 * TILE);
  const [aRow, oRow, wp, op, nb, k, wq] = f.locals("i32", 7);
  const pa = f.locals("i32", TILE);
  f.localGet(min).f32x4Splat().localSet(vmin);
  f.localGet(max).f32x4Splat().localSet(vmax);
  f.localGet(a).localSet(aRow);
  f.localGet(out).localSet(oRow);
  const clamp = { vmin, vmax };
  /**
   * One pixel against two blocks at once (`wp` and `wq`, the next block): four independent
   * accumulators keep the multiply-adds from waiting on each other's latency, and each
   * output still adds its products in k order, as a tile of several pixels does.
   */
  const blockPair = () => {
    f.localGet(wp).localGet(depth).i32Const(1).i32Add().i32Const(BLOCK_BYTES).i32Mul().i32Add()
      .localSet(wq);
    loadBias(f, wp, acc, 1);
    loadBias(f, wq, [acc[2], acc[3]], 1);
    f.localGet(aRow).localSet(pa[0]);
    f.localGet(depth).localSet(k);
    f.loop(() => {
      f.localGet(pa[0]).v128Load32Splat(0).localSet(x);
      for (const [pointer, first] of [[wp, 0], [wq, 2]]) {
        f.localGet(pointer).v128Load(0).localSet(w0);
        f.localGet(pointer).v128Load(16).localSet(w1);
        madd(e, () => f.localGet(x), w0, acc[first]);
        madd(e, () => f.localGet(x), w1, acc[first + 1]);
        addTo(f, pointer, () => f.i32Const(BLOCK_BYTES));
      }
      addTo(f, pa[0], () => f.i32Const(4));
      repeatWhileCounting(f, k);
    });
    for (const [offset, accumulator] of [[0, 0], [16, 1], [32, 2], [48, 3]]) {
      storeAccumulator(e, () => f.localGet(op), offset, acc[accumulator], clamp);
    }
    addTo(f, op, () => f.i32Const(2 * BLOCK_BYTES));
    f.localGet(wq).localSet(wp);
    f.localGet(nb).i32Const(2).i32Sub().localSet(nb);
  };
  const tileBody = (tile: number) => {
    f.localGet(w).localSet(wp);
    f.localGet(oRow).localSet(op);
    f.localGet(blocks).localSet(nb);
    if (tile === 1) {
      f.block(() => {
        f.loop(() => {
          f.localGet(nb).i32Const(2).i32LtU().brIf(1);
          blockPair();
          f.br(0);
        });
      });
    }
    f.block(() => {
      // Nothing left when a single pixel's blocks all went in pairs.
      f.localGet(nb).i32Eqz().brIf(0);
      f.loop(() => {
        loadBias(f, wp, acc, tile);
        f.localGet(aRow).localSet(pa[0]);
        for (let r = 1; r < tile; r++) {
          f.localGet(pa[r - 1]).localGet(aStride).i32Add().localSet(pa[r]);
        }
        f.localGet(depth).localSet(k);
        emitDotLoop(e, { wp, k, w0, w1, x }, pa, acc, tile);
        for (let r = 0; r < tile; r++) {
          const address = () => {
            f.localGet(op);
            if (r > 0) f.localGet(outStride).i32Const(r).i32Mul().i32Add();
          };
          storeAccumulator(e, address, 0, acc[2 * r], clamp);
          storeAccumulator(e, address, 16, acc[2 * r + 1], clamp);
        }
        addTo(f, op, () => f.i32Const(BLOCK_BYTES));
        repeatWhileCounting(f, nb);
      });
    });
  };
  emitTiled(f, rows, tileBody, (tile) => {
    addScaled(f, aRow, aStride, tile);
    addScaled(f, oRow, outStride, tile);
  });
  return f;
}

/**
 * `conv(batches, outHeight, outWidth, blocks, input, batchStride, rowStride, pixelStep,
 * filterHeight, tapRowStep, spans, spanStep, span, w, out, min, max)`: direct convolution
 * of a padded NHWC input (byte strides: `rowStride` between output rows' windows,
 * `pixelStep` between output pixels' windows, `tapRowStep` between filter rows,
 * `spanStep` between runs of `span` contiguous floats within a filter row) into
 * `blocks * 8` channels per output pixel. Tiles of 4 pixels x 8 channels.
 */
function convFunction(arithmetic: Arithmetic): FunctionBuilder {
  const { f, p } = kernelFunction(
    [
      "batches",
      "outHeight",
      "outWidth",
      "blocks",
      "input",
      "batchStride",
      "rowStride",
      "pixelStep",
      "filterHeight",
      "tapRowStep",
      "spans",
      "spanStep",
      "span",
      "w",
      "out",
    ] as const,
  );
  const e = { f, arithmetic };
  const { blocks, input, pixelStep } = p;
  const { filterHeight, tapRowStep, spans, spanStep, span, w, out, min, max } = p;
  const [vmin, vmax, w0, w1, x] = f.locals("v128", 5);
  const acc = f.locals("v128", 2 * TILE);
  const [outPixel, inBatch, inRow, px, op, ob, wp, nb, tapRow, sp, k, b, oy, fy, s, remaining] = f
    .locals("i32", 16);
  const pa = f.locals("i32", TILE);
  f.localGet(min).f32x4Splat().localSet(vmin);
  f.localGet(max).f32x4Splat().localSet(vmax);
  f.localGet(blocks).i32Const(BLOCK_BYTES).i32Mul().localSet(outPixel);
  f.localGet(input).localSet(inBatch);
  f.localGet(out).localSet(op);
  const tileBody = (tile: number) => {
    f.localGet(w).localSet(wp);
    f.localGet(op).localSet(ob);
    f.localGet(blocks).localSet(nb);
    f.loop(() => {
      loadBias(f, wp, acc, tile);
      f.localGet(px).localSet(tapRow);
      f.localGet(filterHeight).localSet(fy);
      f.loop(() => {
        f.localGet(tapRow).localSet(sp);
        f.localGet(spans).localSet(s);
        f.loop(() => {
          f.localGet(sp).localSet(pa[0]);
          for (let r = 1; r < tile; r++) {
            f.localGet(pa[r - 1]).localGet(pixelStep).i32Add().localSet(pa[r]);
          }
          f.localGet(span).localSet(k);
          emitDotLoop(e, { wp, k, w0, w1, x }, pa, acc, tile);
          addTo(f, sp, () => f.localGet(spanStep));
          repeatWhileCounting(f, s);
        });
        addTo(f, tapRow, () => f.localGet(tapRowStep));
        repeatWhileCounting(f, fy);
      });
      storeTile(e, () => f.localGet(ob), { acc, tile, outPixel }, { vmin, vmax });
      addTo(f, ob, () => f.i32Const(BLOCK_BYTES));
      repeatWhileCounting(f, nb);
    });
  };
  emitOutputPixels(f, { ...p, inBatch, inRow, px, op, outPixel, b, oy, remaining }, tileBody);
  return f;
}

/**
 * `dwconv(batches, outHeight, outWidth, blocks, input, batchStride, rowStride, pixelStep,
 * filterHeight, tapRowStep, filterWidth, tapStep, w, out, min, max)`: depthwise
 * convolution of a padded NHWC input with `blocks * 8` channels per pixel (byte strides as
 * for `conv`, `tapStep` between taps of a filter row), depthwise-layout weights at `w`
 * (rows of `blocks * 8` floats: biases, then one row per tap). Tiles of 4 pixels x 8
 * channels.
 */
function dwconvFunction(arithmetic: Arithmetic): FunctionBuilder {
  const { f, p } = kernelFunction(
    [
      "batches",
      "outHeight",
      "outWidth",
      "blocks",
      "input",
      "batchStride",
      "rowStride",
      "pixelStep",
      "filterHeight",
      "tapRowStep",
      "filterWidth",
      "tapStep",
      "w",
      "out",
    ] as const,
  );
  const e = { f, arithmetic };
  const { blocks, input, pixelStep } = p;
  const { filterHeight, tapRowStep, filterWidth, tapStep, w, out, min, max } = p;
  const [vmin, vmax, w0, w1] = f.locals("v128", 4);
  const acc = f.locals("v128", 2 * TILE);
  const [outPixel, inBatch, inRow, px, op, wp, nb, channel, tapRow, tap, q, b, oy, fy, fx] = f
    .locals("i32", 15);
  const remaining = f.local("i32");
  f.localGet(min).f32x4Splat().localSet(vmin);
  f.localGet(max).f32x4Splat().localSet(vmax);
  f.localGet(blocks).i32Const(BLOCK_BYTES).i32Mul().localSet(outPixel);
  f.localGet(input).localSet(inBatch);
  f.localGet(out).localSet(op);
  const tileBody = (tile: number) => {
    f.i32Const(0).localSet(channel);
    f.localGet(blocks).localSet(nb);
    f.loop(() => {
      // The block's column of the depthwise layout: bias row, then one row per tap.
      f.localGet(w).localGet(channel).i32Add().localSet(wp);
      loadBias(f, wp, acc, tile);
      addTo(f, wp, () => f.localGet(outPixel).i32Const(BLOCK_BYTES).i32Sub());
      f.localGet(px).localGet(channel).i32Add().localSet(tapRow);
      f.localGet(filterHeight).localSet(fy);
      f.loop(() => {
        f.localGet(tapRow).localSet(tap);
        f.localGet(filterWidth).localSet(fx);
        f.loop(() => {
          f.localGet(wp).v128Load(0).localSet(w0);
          f.localGet(wp).v128Load(16).localSet(w1);
          addTo(f, wp, () => f.localGet(outPixel));
          f.localGet(tap).localSet(q);
          for (let r = 0; r < tile; r++) {
            if (r > 0) addTo(f, q, () => f.localGet(pixelStep));
            madd(e, () => f.localGet(q).v128Load(0), w0, acc[2 * r]);
            madd(e, () => f.localGet(q).v128Load(16), w1, acc[2 * r + 1]);
          }
          addTo(f, tap, () => f.localGet(tapStep));
          repeatWhileCounting(f, fx);
        });
        addTo(f, tapRow, () => f.localGet(tapRowStep));
        repeatWhileCounting(f, fy);
      });
      storeTile(e, () => f.localGet(op).localGet(channel).i32Add(), { acc, tile, outPixel }, {
        vmin,
        vmax,
      });
      addTo(f, channel, () => f.i32Const(BLOCK_BYTES));
      repeatWhileCounting(f, nb);
    });
  };
  emitOutputPixels(f, { ...p, inBatch, inRow, px, op, outPixel, b, oy, remaining }, tileBody);
  return f;
}

/**
 * Stores the accumulators of `tile` pixels (8 channels each) at the address pushed by
 * `pushBase`, one pixel every `outPixel` bytes.
 */
function storeTile(
  e: Emitter,
  pushBase: () => void,
  { acc, tile, outPixel }: { acc: number[]; tile: number; outPixel: number },
  clamp: { vmin: number; vmax: number },
): void {
  const { f } = e;
  for (let r = 0; r < tile; r++) {
    const address = () => {
      pushBase();
      if (r > 0) f.localGet(outPixel).i32Const(r).i32Mul().i32Add();
    };
    storeAccumulator(e, address, 0, acc[2 * r], clamp);
    storeAccumulator(e, address, 16, acc[2 * r + 1], clamp);
  }
}

/**
 * The loops of a convolution over its output: batches, output rows, and each row's pixels
 * in tiles (`tileBody(tile)` computes one tile at input window `px` and output `op`), the
 * window moving by `pixelStep` a pixel, `rowStride` a row and `batchStride` a batch; the
 * named locals are the loops' own.
 */
function emitOutputPixels(
  f: FunctionBuilder,
  l: {
    batches: number;
    outHeight: number;
    outWidth: number;
    batchStride: number;
    rowStride: number;
    pixelStep: number;
    outPixel: number;
    inBatch: number;
    inRow: number;
    px: number;
    op: number;
    b: number;
    oy: number;
    remaining: number;
  },
  tileBody: (tile: number) => void,
): void {
  f.localGet(l.batches).localSet(l.b);
  f.loop(() => {
    f.localGet(l.inBatch).localSet(l.inRow);
    f.localGet(l.outHeight).localSet(l.oy);
    f.loop(() => {
      f.localGet(l.inRow).localSet(l.px);
      f.localGet(l.outWidth).localSet(l.remaining);
      emitTiled(f, l.remaining, tileBody, (tile) => {
        addScaled(f, l.px, l.pixelStep, tile);
        addScaled(f, l.op, l.outPixel, tile);
      });
      addTo(f, l.inRow, () => f.localGet(l.rowStride));
      repeatWhileCounting(f, l.oy);
    });
    addTo(f, l.inBatch, () => f.localGet(l.batchStride));
    repeatWhileCounting(f, l.b);
  });
}

/**
 * The kernels' module bytes, with or without relaxed SIMD; they import a shared memory (see
 * `WasmHeap`), so worker lanes can run them on the same data.
 */
export function simdModuleBytes(relaxed: boolean): Uint8Array<ArrayBuffer> {
  const arithmetic = relaxed ? "relaxed" : "f32";
  const module = new ModuleBuilder({ shared: true })
    .export("gemm", gemmFunction(arithmetic))
    .export("conv", convFunction(arithmetic))
    .export("dwconv", dwconvFunction(arithmetic))
    .export("q8gemm", gemmFunction("i16dot"))
    .export("q8conv", convFunction("i16dot"))
    .export("q8dwconv", dwconvFunction("i32mul"))
    .export("q8requantize", requantizeFunction());
  for (const [name, code] of elementwiseFunctions()) module.export(name, code);
  return module.encode();
}
