/**
 * CONV_2D on the gpu device against the CPU kernels, on this machine's adapter:
 * `deno run -A driver/devices/gpu/benchmark.ts`. The GPU kernel time is the difference
 * between a subgraph of 9 chained convolutions and one of 1, divided by 8, so the fixed
 * cost of a run (upload, Deno's 10 ms map polling, download) cancels; a single run's time
 * is printed too. The CPU times are the reference kernel and the manifest's best kernel
 * (what `cpu-simd` binds), medians of several runs.
 */
import { seededFloats } from "../../../kernels/seeded_random.ts";
import { conv2dFloat } from "../../../kernels/conv_2d.ts";
import { packGemmWeights } from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import { createF32Conv2d } from "../../../kernels/manifest.ts";
import { openGpu } from "./context.ts";
import { type GpuOperand, type GpuStep, prepareGpuSubgraph } from "./subgraph.ts";

/** [size, inDepth, outDepth, filter]: square NHWC images, SAME padding, stride 1. */
const CASES: [number, number, number, number][] = [
  [56, 32, 32, 3],
  [28, 128, 128, 1],
  [112, 32, 32, 3],
];

function median(values: number[]): number {
  return [...values].sort((a, b) => a - b)[values.length >> 1];
}

async function timeMs(run: () => unknown, runs = 7): Promise<number> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  return median(times);
}

function tensor(shape: number[], value?: Float32Array): GpuOperand {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, ...(value ? { value } : {}) };
}

function int32(value: number): GpuOperand {
  return { type: "INT32", shape: [], scale: 0, zeroPoint: 0, value: Int32Array.of(value) };
}

const gpu = await openGpu();
if (!gpu) throw new Error("no WebGPU adapter (Debian: libegl-mesa0 and libgl1-mesa-dri)");
console.log(`adapter: ${gpu.adapter.description}`);
for (const [size, inDepth, outDepth, f] of CASES) {
  const macs = size * size * outDepth * f * f * inDepth;
  const filter = seededFloats(outDepth * f * f * inDepth, 2, 0.1);
  const bias = seededFloats(outDepth, 3, 0.1);
  const image = seededFloats(size * size * inDepth, 1, 2);

  /** ms of a run of `count` chained convolutions (a chain needs inDepth = outDepth). */
  const gpuChain = async (count: number) => {
    const operands = [
      tensor([1, size, size, inDepth]),
      tensor([outDepth, f, f, inDepth], filter),
      tensor([outDepth], bias),
      ...[1, 1, 1, 0].map(int32),
    ];
    const steps: GpuStep[] = [];
    let previous = 0;
    for (let s = 0; s < count; s++) {
      operands.push(tensor([1, size, size, outDepth]));
      const output = operands.length - 1;
      steps.push({ type: "CONV_2D", inputs: [previous, 1, 2, 3, 4, 5, 6], outputs: [output] });
      previous = output;
    }
    const subgraph = await prepareGpuSubgraph(gpu, steps, {
      operands,
      needed: new Set([previous]),
    });
    const ms = await timeMs(() => subgraph.run(new Map([[0, image]])));
    subgraph.destroy();
    return ms;
  };
  const single = await gpuChain(1);
  const kernel = inDepth === outDepth ? ((await gpuChain(9)) - single) / 8 : NaN;

  const g = {
    batches: 1,
    inHeight: size,
    inWidth: size,
    inDepth,
    outHeight: size,
    outWidth: size,
    outDepth,
    filterHeight: f,
    filterWidth: f,
    strideHeight: 1,
    strideWidth: 1,
    dilationHeight: 1,
    dilationWidth: 1,
    padTop: (f - 1) >> 1,
    padLeft: (f - 1) >> 1,
  };
  const activation = activationRangeFloat(0);
  const out = new Float32Array(size * size * outDepth);
  const reference = await timeMs(() => conv2dFloat(g, image, filter, bias, activation, out), 3);
  const packed = packGemmWeights(filter, bias, { channels: outDepth, depth: f * f * inDepth });
  const best = createF32Conv2d(g, packed, { activation });
  const simd = await timeMs(() => best(image, out));
  const rate = (ms: number) => `${(macs / ms / 1e6).toFixed(2)} GMAC/s`;
  console.log(
    `CONV_2D 1x${size}x${size}x${inDepth} * ${f}x${f}x${inDepth}x${outDepth} ` +
      `(${(macs / 1e6).toFixed(1)} M MAC): gpu kernel ${kernel.toFixed(2)} ms (${rate(kernel)}), ` +
      `gpu run ${single.toFixed(2)} ms; cpu reference ${reference.toFixed(2)} ms ` +
      `(${rate(reference)}); cpu manifest kernel ${simd.toFixed(2)} ms (${rate(simd)})`,
  );
}
gpu.close();
