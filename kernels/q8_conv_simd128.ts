/**
 * The quant8 WebAssembly SIMD kernels (`q8gemm`, `q8conv`, `q8dwconv` and `q8requantize`,
 * generated with the float32 ones by `f32_simd_codegen.ts`) bound to packed weights
 * (`q8_packing.ts`): a call stages its input in the heap as `x - inputZeroPoint` (int16
 * pairs for CONV_2D and FULLY_CONNECTED, int32 for DEPTHWISE_CONV_2D; zero padded, so padding
 * adds nothing, as the reference kernels skip it), sums exactly in int32, and requantizes each
 * sum as the Android 10 reference does. The output is bit for bit the reference kernels'.
 * Large calls are split across compute lanes like the float ones.
 */
import type { Conv2dGeometry, QuantizedOutputStage } from "./conv_common.ts";
import type { DepthwiseGeometry } from "./conv_depthwise.ts";
import { blockCount, F32_BLOCK } from "./f32_packing.ts";
import { callWindowed, windowArgs } from "./f32_conv_simd128.ts";
import {
  align64,
  anySimdRuntime,
  callSplit,
  type KernelName,
  placeWeights,
  scratchOrUndefined,
  share,
  type SimdRuntime,
} from "./simd_runtime.ts";
import { type PaddedInput, paddedInputLength, windowInput } from "./f32_window_input.ts";
import { pairsPerTap, type Quant8Values } from "./q8_packing.ts";
import { requantizeParams } from "./q8_requantize_codegen.ts";
import type { WasmHeap } from "./wasm_heap.ts";

/**
 * Runs the kernel from `input` into `output` (the same quant8 type); false when the heap
 * could not give the scratch space it needs (nothing is written; run the reference).
 */
export type Q8Runner = (input: Quant8Values, output: Quant8Values) => boolean;

/** The output stage a quant8 kernel is bound to (the filter offset is in the weights). */
export type Q8OutputStage = Omit<QuantizedOutputStage, "filterOffset">;

const BLOCK_BYTES = F32_BLOCK * 4;
/** Requantization steps per output value, counted as multiply-adds when deciding a split. */
const REQUANTIZE_WORK = 4;

/**
 * Writes the staged copy (layout `p`, int16 or int32 values) of a quant8 convolution input at
 * element `offset` of `target`: `x + inputOffset` inside the input, zeros elsewhere, input
 * channel `c` repeated at channels `c * depthMultiplier ...`.
 */
function stageInput(
  input: Quant8Values,
  inputOffset: number,
  target: Int16Array | Int32Array,
  options: { g: Conv2dGeometry; p: PaddedInput; offset: number },
): void {
  const { g, p, offset } = options;
  const { inHeight, inWidth, inDepth } = g;
  const { height, width, top, left, depthMultiplier, pixelStride } = p;
  target.fill(0, offset, offset + paddedInputLength(g, p));
  const x0 = Math.max(0, left);
  const x1 = Math.min(width, left + inWidth);
  const rowLength = width * pixelStride;
  for (let b = 0; b < g.batches; b++) {
    for (let py = 0; py < height; py++) {
      const iy = py - top;
      if (iy < 0 || iy >= inHeight) continue;
      let from = ((b * inHeight + iy) * inWidth + (x0 - left)) * inDepth;
      let to = offset + (b * height + py) * rowLength + x0 * pixelStride;
      for (let x = x0; x < x1; x++, from += inDepth, to += pixelStride) {
        if (depthMultiplier === 1) {
          for (let c = 0; c < inDepth; c++) target[to + c] = input[from + c] + inputOffset;
          continue;
        }
        for (let c = 0, t = to; c < inDepth; c++) {
          const v = input[from + c] + inputOffset;
          for (let m = 0; m < depthMultiplier; m++) target[t++] = v;
        }
      }
    }
  }
}

/** A quant8 call's layout: staged input, int32 sums, output bytes, all in the heap. */
interface Q8Call {
  runtime: SimdRuntime;
  stage: Q8OutputStage;
  /** Output rows (pixels) and channels per row. */
  rows: number;
  channels: number;
  /** Bytes the staged input takes. */
  inputBytes: number;
  /** Stages the input at byte `at`. */
  stageAt(heap: WasmHeap, input: Quant8Values, at: number): void;
  /** Runs the sums kernel on the staged input into rows of `blocks * 8` int32 at `sums`. */
  sum(input: number, weights: number, sums: number): void;
}

/**
 * Binds a quant8 call to its packed weights: each run stages the input, sums, and
 * requantizes into the output (in place when the output lies in the heap).
 */
function q8Runner(call: Q8Call, packed: Int32Array): Q8Runner | undefined {
  const { runtime, stage, rows, channels } = call;
  const { heap } = runtime;
  const params = requantizeParams(stage.multipliers, stage.shifts, channels);
  if (!params) return undefined;
  const blocks = blockCount(channels);
  const sumStride = blocks * BLOCK_BYTES;
  const sumBytes = rows * sumStride;
  // The kernel writes whole blocks of 8 bytes: rows of whole blocks go to the output itself
  // (in place when it lies in the heap), others to rows of the padded width, copied out.
  const dense = channels === blocks * F32_BLOCK;
  const outStride = blocks * F32_BLOCK;
  const outputBytes = align64(rows * outStride);
  let weights = 0, paramsAt = 0;
  const run: Q8Runner = (input, output) => {
    if (rows === 0) return true;
    const outInPlace = dense ? heap.addressOf(output) : undefined;
    const base = scratchOrUndefined(
      heap,
      call.inputBytes + sumBytes + (outInPlace === undefined ? outputBytes : 0),
    );
    if (base === undefined) return false;
    call.stageAt(heap, input, base);
    const sums = base + call.inputBytes;
    call.sum(base, weights, sums);
    const out = outInPlace ?? sums + sumBytes;
    // Int8 outputs are computed as uint8 ones shifted by 128, then their top bits flipped.
    const shift = output instanceof Int8Array ? 128 : 0;
    const { min, max } = stage.activation;
    callSplit(runtime, "q8requantize", rows * outStride * REQUANTIZE_WORK, rows, (i, n) => {
      const [r0, r1] = share(rows, i, n, 1);
      return [sums + r0 * sumStride, sumStride, out + r0 * outStride, outStride, r1 - r0, blocks]
        .concat(paramsAt, stage.outputOffset + shift, min + shift, max + shift, shift);
    });
    if (outInPlace === undefined) {
      const target = new Uint8Array(output.buffer, output.byteOffset, output.byteLength);
      const memory = new Uint8Array(heap.buffer());
      if (dense) target.set(memory.subarray(out, out + rows * channels));
      else {
        for (let r = 0, from = out; r < rows; r++, from += outStride) {
          target.set(memory.subarray(from, from + channels), r * channels);
        }
      }
    }
    return true;
  };
  weights = placeWeights(heap, run, packed);
  paramsAt = placeWeights(heap, run, new Int32Array(params));
  return run;
}

/**
 * A windowed quant8 kernel's call (`q8conv` on int16 pairs, `q8dwconv` on int32 per
 * channel): the input staged with a per-pixel stride of `pixelStride` elements of
 * `elementBytes`, the kernel's float-style argument list with `min, max` unused.
 */
function windowedCall(
  g: DepthwiseGeometry,
  stage: Q8OutputStage,
  runtime: SimdRuntime,
  form: { kernel: KernelName; depthMultiplier: number; pixelStride: number; elementBytes: 2 | 4 },
): Q8Call {
  const { batches, outHeight, outWidth, outDepth } = g;
  const { kernel, pixelStride, elementBytes } = form;
  const padded: PaddedInput = {
    ...windowInput(g),
    depthMultiplier: form.depthMultiplier,
    pixelStride,
  };
  const rowBytes = padded.width * pixelStride * elementBytes;
  const pixelBytes = pixelStride * elementBytes;
  const blocks = blockCount(outDepth);
  const depthwise = kernel === "q8dwconv";
  return {
    runtime,
    stage,
    rows: batches * outHeight * outWidth,
    channels: outDepth,
    inputBytes: align64(batches * padded.height * rowBytes),
    stageAt(heap, input, at) {
      const target = elementBytes === 2
        ? new Int16Array(heap.buffer())
        : new Int32Array(heap.buffer());
      stageInput(input, stage.inputOffset, target, { g, p: padded, offset: at / elementBytes });
    },
    sum(input, weights, sums) {
      const taps = g.filterHeight * g.filterWidth;
      const staged = { height: padded.height, rowBytes, pixelBytes };
      callWindowed(
        {
          runtime,
          kernel,
          outputStride: blocks * F32_BLOCK,
          pixelWork: taps * (depthwise ? 1 : pixelStride) * blocks * F32_BLOCK,
          args: windowArgs(g, staged, { blocks, depthwise }),
        },
        input,
        weights,
        sums,
      );
    },
  };
}

/** Quant8 CONV_2D on GEMM-layout pair words; undefined where it cannot run here. */
export function q8Conv2dSimd(
  g: Conv2dGeometry,
  packed: Int32Array,
  stage: Q8OutputStage,
): Q8Runner | undefined {
  const runtime = anySimdRuntime();
  if (!runtime) return undefined;
  const pixelStride = 2 * pairsPerTap(g.inDepth);
  const call = windowedCall({ ...g, depthMultiplier: 1 }, stage, runtime, {
    kernel: "q8conv",
    depthMultiplier: 1,
    pixelStride,
    elementBytes: 2,
  });
  return q8Runner(call, packed);
}

/** Quant8 DEPTHWISE_CONV_2D on depthwise-layout int32 words; undefined where it cannot run. */
export function q8DepthwiseConv2dSimd(
  g: DepthwiseGeometry,
  packed: Int32Array,
  stage: Q8OutputStage,
): Q8Runner | undefined {
  const runtime = anySimdRuntime();
  if (!runtime) return undefined;
  const call = windowedCall(g, stage, runtime, {
    kernel: "q8dwconv",
    depthMultiplier: g.depthMultiplier,
    pixelStride: blockCount(g.outDepth) * F32_BLOCK,
    elementBytes: 4,
  });
  return q8Runner(call, packed);
}

/**
 * Quant8 FULLY_CONNECTED: `rows` inputs of `depth` values on GEMM-layout pair words (one
 * tap); split in row bands, or in channel blocks when there are few rows.
 */
export function q8FullyConnectedSimd(
  shape: { rows: number; depth: number; channels: number },
  packed: Int32Array,
  stage: Q8OutputStage,
): Q8Runner | undefined {
  const runtime = anySimdRuntime();
  if (!runtime) return undefined;
  const { rows, depth, channels } = shape;
  const pairs = pairsPerTap(depth);
  const rowBytes = pairs * 4;
  const blocks = blockCount(channels);
  const sumStride = blocks * BLOCK_BYTES;
  const work = rows * pairs * 2 * blocks * F32_BLOCK;
  return q8Runner({
    runtime,
    stage,
    rows,
    channels,
    inputBytes: align64(rows * rowBytes),
    stageAt(heap, input, at) {
      const target = new Int16Array(heap.buffer());
      const start = at / 2, stride = 2 * pairs;
      if (stride !== depth) target.fill(0, start, start + rows * stride);
      for (let r = 0; r < rows; r++) {
        for (let k = 0, from = r * depth, to = start + r * stride; k < depth; k++) {
          target[to + k] = input[from + k] + stage.inputOffset;
        }
      }
    },
    sum(input, weights, sums) {
      if (rows >= 8) {
        callSplit(runtime, "q8gemm", work, Math.floor(rows / 4), (i, n) => {
          const [r0, r1] = share(rows, i, n, 4);
          return [r1 - r0, pairs, blocks, input + r0 * rowBytes, rowBytes, weights]
            .concat(sums + r0 * sumStride, sumStride, 0, 0);
        });
        return;
      }
      const blockBytes = (pairs + 1) * BLOCK_BYTES;
      callSplit(runtime, "q8gemm", work, blocks, (i, n) => {
        const [b0, b1] = share(blocks, i, n, 1);
        return [rows, pairs, b1 - b0, input, rowBytes, weights + b0 * blockBytes]
          .concat(sums + b0 * BLOCK_BYTES, sumStride, 0, 0);
      });
    },
  }, packed);
}
