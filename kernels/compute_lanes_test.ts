/**
 * Kernel calls split across compute lanes give the same floats, bit for bit, as the call run
 * whole (each output element is computed by one thread in the same order), at band
 * boundaries that fall inside tiles, with few rows (channel bands) and several batches; the
 * thread budget is back where it was after every call. Operands that live in the kernel
 * heap (an executable's arena) are read and written in place with the same result.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { Conv2dGeometry } from "./conv_common.ts";
import type { DepthwiseGeometry } from "./conv_depthwise.ts";
import {
  borrowThreads,
  countRunning,
  lanesReady,
  privateThreadBudget,
  returnThreads,
  setThreadBudget,
  type ShareCounters,
  splitCallCount,
} from "./compute_lanes.ts";
import { packDepthwiseWeights, packGemmWeights } from "./f32_packing.ts";
import { activationRangeFloat } from "./fixed_point.ts";
import {
  createF32Conv2d,
  createF32DepthwiseConv2d,
  createF32FullyConnected,
  type KernelIsa,
} from "./manifest.ts";
import { seededFloats } from "./seeded_random.ts";
import { realmHeap } from "./wasm_heap.ts";
import type { F32Runner } from "./f32_conv_scalar.ts";

const RELU6 = activationRangeFloat(3);
const NONE = activationRangeFloat(0);

function conv(size: number, inDepth: number, filter: number, stride: number, outDepth: number) {
  const out = Math.ceil(size / stride);
  const pad = Math.floor(Math.max((out - 1) * stride + filter - size, 0) / 2);
  return {
    batches: 1,
    inHeight: size,
    inWidth: size,
    inDepth,
    filterHeight: filter,
    filterWidth: filter,
    outHeight: out,
    outWidth: out,
    outDepth,
    strideHeight: stride,
    strideWidth: stride,
    dilationHeight: 1,
    dilationWidth: 1,
    padTop: pad,
    padLeft: pad,
  } satisfies Conv2dGeometry;
}

interface Case {
  name: string;
  runner: (isa: KernelIsa) => F32Runner;
  input: Float32Array;
  outputLength: number;
}

function convCase(g: Conv2dGeometry, seed: number): Case {
  const taps = g.filterHeight * g.filterWidth * g.inDepth;
  const filter = seededFloats(g.outDepth * taps, seed, 2 / Math.sqrt(taps));
  const bias = seededFloats(g.outDepth, seed + 1, 0.2);
  const packed = packGemmWeights(filter, bias, { channels: g.outDepth, depth: taps });
  return {
    name: `conv ${g.filterHeight}x${g.filterWidth}/${g.strideHeight} ${g.batches}x` +
      `${g.inHeight}x${g.inWidth}x${g.inDepth}->${g.outDepth}`,
    runner: (isa) => createF32Conv2d(g, packed, { activation: RELU6, isa }),
    input: seededFloats(g.batches * g.inHeight * g.inWidth * g.inDepth, seed + 2, 2),
    outputLength: g.batches * g.outHeight * g.outWidth * g.outDepth,
  };
}

function depthwiseCase(g: DepthwiseGeometry, seed: number): Case {
  const taps = g.filterHeight * g.filterWidth;
  const filter = seededFloats(taps * g.outDepth, seed, 2 / Math.sqrt(taps));
  const bias = seededFloats(g.outDepth, seed + 1, 0.2);
  const packed = packDepthwiseWeights(filter, bias, { channels: g.outDepth, taps });
  return {
    name: `dwconv ${g.filterHeight}x${g.filterWidth}/${g.strideHeight} ${g.batches}x` +
      `${g.inHeight}x${g.inWidth}x${g.inDepth}`,
    runner: (isa) => createF32DepthwiseConv2d(g, packed, { activation: NONE, isa }),
    input: seededFloats(g.batches * g.inHeight * g.inWidth * g.inDepth, seed + 2, 2),
    outputLength: g.batches * g.outHeight * g.outWidth * g.outDepth,
  };
}

function fullyConnectedCase(rows: number, depth: number, channels: number, seed: number): Case {
  const weights = seededFloats(channels * depth, seed, 2 / Math.sqrt(depth));
  const bias = seededFloats(channels, seed + 1, 0.2);
  const packed = packGemmWeights(weights, bias, { channels, depth });
  return {
    name: `fully connected ${rows}x${depth}->${channels}`,
    runner: (isa) =>
      createF32FullyConnected({ rows, depth, channels }, packed, {
        activation: NONE,
        isa,
      }),
    input: seededFloats(rows * depth, seed + 2, 2),
    outputLength: rows * channels,
  };
}

const CASES: Case[] = [
  // Pointwise: a GEMM over 29 x 29 pixels (841 rows: bands end inside a tile).
  convCase(conv(29, 24, 1, 1, 40), 1),
  convCase(conv(65, 3, 3, 2, 32), 10),
  convCase({ ...conv(15, 16, 3, 1, 24), batches: 2 }, 20),
  depthwiseCase({ ...conv(57, 48, 3, 1, 48), depthMultiplier: 1 }, 30),
  depthwiseCase({ ...conv(29, 96, 5, 2, 96), depthMultiplier: 1, batches: 3 }, 40),
  fullyConnectedCase(1, 1280, 1000, 50),
  fullyConnectedCase(3, 2000, 99, 60),
  // VALID padding, windows covering the whole input: read in place.
  convCase({ ...conv(33, 8, 3, 1, 16), outHeight: 31, outWidth: 31, padTop: 0, padLeft: 0 }, 70),
  // 13 channels: the output keeps its copy (channels are not whole SIMD blocks).
  convCase(conv(80, 13, 1, 1, 13), 80),
];

async function untilLanesReady(count: number): Promise<void> {
  const ready = await lanesReady(count, 20_000);
  ok(ready >= count, `${ready} of ${count} lanes ready`);
}

for (const isa of ["simd128", "relaxedsimd"] as const) {
  Deno.test(`${isa} kernels split across compute lanes give the floats of the whole call`, async () => {
    const wholes = CASES.map((c) => {
      const out = new Float32Array(c.outputLength);
      c.runner(isa)(c.input, out);
      return out;
    });
    const budget = privateThreadBudget(3);
    setThreadBudget(budget);
    try {
      // Lanes start on the first split attempt; run once so they exist, then wait for them.
      CASES[0].runner(isa)(CASES[0].input, new Float32Array(CASES[0].outputLength));
      await untilLanesReady(2);
      for (const [k, c] of CASES.entries()) {
        const before = splitCallCount();
        const out = new Float32Array(c.outputLength);
        c.runner(isa)(c.input, out);
        ok(splitCallCount() > before, `${c.name}: the call was split`);
        deepStrictEqual(out, wholes[k], c.name);
        strictEqual(budget.counters[0], 2, `${c.name}: free threads restored`);
        strictEqual(budget.counters[budget.slot], 0, `${c.name}: no lanes held`);
      }
    } finally {
      setThreadBudget(undefined);
    }
  });
}

Deno.test("with no free threads in the budget a call runs whole in its own thread", async () => {
  const budget = privateThreadBudget(3);
  setThreadBudget(budget);
  try {
    const c = CASES[0];
    c.runner("simd128")(c.input, new Float32Array(c.outputLength));
    await untilLanesReady(2);
    Atomics.store(budget.counters, 0, 0);
    const before = splitCallCount();
    const out = new Float32Array(c.outputLength);
    c.runner("simd128")(c.input, out);
    strictEqual(splitCallCount(), before, "no split without free threads");
    strictEqual(budget.counters[0], 0);
  } finally {
    setThreadBudget(undefined);
  }
});

Deno.test("operands in the kernel heap are read and written in place with the same floats", () => {
  const heap = realmHeap();
  for (const c of CASES) {
    for (const isa of ["simd128", "relaxedsimd"] as const) {
      const want = new Float32Array(c.outputLength);
      const run = c.runner(isa);
      run(c.input, want);
      const inputAt = heap.allocate(c.input.byteLength);
      const outputAt = heap.allocate(c.outputLength * 4);
      try {
        const input = new Float32Array(heap.buffer(), inputAt, c.input.length);
        const output = new Float32Array(heap.buffer(), outputAt, c.outputLength);
        input.set(c.input);
        output.fill(Number.NaN);
        run(input, output);
        deepStrictEqual(output.slice(), want, `${c.name} (${isa})`);
        deepStrictEqual(input.slice(), c.input, `${c.name} (${isa}): input untouched`);
      } finally {
        heap.release(inputAt);
        heap.release(outputAt);
      }
    }
  }
});

Deno.test("a run borrows at most an equal share of the pool's threads among executions running now or lately", () => {
  // The pool's layout for one slot: [free, held, epoch, running, peak, peak seen at].
  const counters = new Int32Array(new SharedArrayBuffer(6 * 4));
  const share: ShareCounters = {
    threads: 8,
    runningIndex: 3,
    peakIndex: 4,
    peakAtIndex: 5,
    epochMs: Date.now(),
  };
  counters[0] = 8;
  const held = (change: 1 | -1) => {
    Atomics.sub(counters, 0, change);
    countRunning(counters, share, change);
  };
  setThreadBudget({ counters, slot: 1, epochIndex: 2, maxLanes: 0, share });
  try {
    held(1);
    strictEqual(borrowThreads(7), 0, "maxLanes still bounds a run");
    setThreadBudget({ counters, slot: 1, epochIndex: 2, maxLanes: 7, share });
    strictEqual(borrowThreads(7), 7, "alone: every thread");
    returnThreads(7);
    held(1);
    strictEqual(borrowThreads(7), 3, "two running: 4 threads each");
    returnThreads(3);
    held(-1);
    strictEqual(counters[3], 1);
    strictEqual(borrowThreads(7), 3, "two ran at once just now: still 4 threads");
    returnThreads(3);
    share.epochMs -= 1000; // that peak is a second old
    strictEqual(borrowThreads(7), 7, "alone for longer than the window: every thread");
    returnThreads(7);
    held(-1);
    strictEqual(counters[0], 8, "every thread back");
  } finally {
    setThreadBudget(undefined);
  }
});
