/**
 * The gpu device's matrix kernels against the CPU's best, on this machine's adapters:
 * `deno run -A driver/devices/gpu/benchmark.ts [dawn|deno]...` (both by default). The GPU
 * kernel time is the difference between a subgraph of 9 steps reading one input and one of
 * 1, divided by 8, so the fixed cost of a run (upload, Deno's 10 ms map polling, download)
 * cancels; a single run's time is printed too. `relaxed` is the same with the model's
 * relaxComputationFloat32toFloat16 set (float16 weights where the adapter has shader-f16).
 * The CPU time is the manifest's best kernel (what `cpu-simd` binds), a median of runs.
 */
import { seededFloats } from "../../../kernels/seeded_random.ts";
import { packGemmWeights } from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import { createF32Conv2d, createF32FullyConnected } from "../../../kernels/manifest.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import {
  GPU_IMPLEMENTATIONS,
  type GpuContext,
  type GpuImplementation,
  openGpu,
} from "./context.ts";
import { type GpuOperand, type GpuStep, prepareGpuSubgraph } from "./subgraph.ts";

/** One benchmarked layer: its operation, operands (input first, output last) and CPU twin. */
interface Layer {
  name: string;
  macs: number;
  type: OperationType;
  /** The step's inputs; operand 0 is the runtime input. */
  inputs: GpuOperand[];
  output: number[];
  /** The CPU manifest kernel on the same data, when there is one to compare with. */
  cpu?: () => void;
}

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

/** A SAME-padded stride-1 CONV_2D (or DEPTHWISE_CONV_2D, multiplier 1) on a square image. */
function convLayer(
  batches: number,
  size: number,
  inDepth: number,
  outDepth: number,
  f: number,
  depthwise = false,
): Layer {
  const macs = batches * size * size * outDepth * f * f * (depthwise ? 1 : inDepth);
  const filterShape = depthwise ? [1, f, f, outDepth] : [outDepth, f, f, inDepth];
  const filter = seededFloats(filterShape.reduce((a, b) => a * b), 2, 0.1);
  const bias = seededFloats(outDepth, 3, 0.1);
  const image = seededFloats(batches * size * size * inDepth, 1, 2);
  const pad = (f - 1) >> 1;
  const layer: Layer = {
    name: `${depthwise ? "DEPTHWISE_CONV_2D" : "CONV_2D"} ${batches}x${size}x${size}x${inDepth}` +
      ` * ${f}x${f}x${depthwise ? 1 : inDepth}x${outDepth}`,
    macs,
    type: depthwise ? "DEPTHWISE_CONV_2D" : "CONV_2D",
    inputs: [
      tensor([batches, size, size, inDepth], image),
      tensor(filterShape, filter),
      tensor([outDepth], bias),
      ...[pad, pad, pad, pad, 1, 1].map(int32),
      ...(depthwise ? [int32(1)] : []),
      int32(0),
    ],
    output: [batches, size, size, outDepth],
  };
  if (depthwise) return layer;
  const g = {
    batches,
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
    padTop: pad,
    padLeft: pad,
  };
  const out = new Float32Array(batches * size * size * outDepth);
  const packed = packGemmWeights(filter, bias, { channels: outDepth, depth: f * f * inDepth });
  const best = createF32Conv2d(g, packed, { activation: activationRangeFloat(0) });
  layer.cpu = () => best(image, out);
  return layer;
}

/** FULLY_CONNECTED [batches, depth] x [units, depth]^T with constant weights. */
function denseLayer(batches: number, depth: number, units: number): Layer {
  const weights = seededFloats(units * depth, 2, 0.05);
  const bias = seededFloats(units, 3, 0.1);
  const input = seededFloats(batches * depth, 1, 2);
  const out = new Float32Array(batches * units);
  const packed = packGemmWeights(weights, bias, { channels: units, depth });
  const best = createF32FullyConnected({ rows: batches, depth, channels: units }, packed, {
    activation: activationRangeFloat(0),
  });
  return {
    name: `FULLY_CONNECTED ${batches}x${depth} -> ${units}`,
    macs: batches * depth * units,
    type: "FULLY_CONNECTED",
    inputs: [
      tensor([batches, depth], input),
      tensor([units, depth], weights),
      tensor([units], bias),
      int32(0),
    ],
    output: [batches, units],
    cpu: () => best(input, out),
  };
}

const LAYERS: (() => Layer)[] = [
  () => convLayer(1, 56, 32, 32, 3),
  () => convLayer(1, 112, 32, 32, 3),
  () => convLayer(1, 28, 128, 128, 1),
  () => convLayer(1, 112, 32, 16, 1),
  () => convLayer(1, 56, 144, 24, 1),
  () => convLayer(4, 28, 32, 96, 3),
  () => convLayer(1, 112, 32, 32, 3, true),
  () => convLayer(1, 56, 144, 144, 3, true),
  () => denseLayer(1, 1280, 1000),
  () => denseLayer(16, 1280, 1000),
];

/** ms of a run of `count` copies of the layer's step, all reading its input. */
async function gpuSteps(gpu: GpuContext, layer: Layer, count: number, relaxed: boolean) {
  const [input, ...parameters] = layer.inputs;
  const operands = [tensor(input.shape as number[]), ...parameters];
  const parameterIndexes = parameters.map((_, k) => 1 + k);
  const steps: GpuStep[] = [];
  for (let s = 0; s < count; s++) {
    operands.push(tensor(layer.output));
    steps.push({
      type: layer.type,
      inputs: [0, ...parameterIndexes],
      outputs: [operands.length - 1],
    });
  }
  const subgraph = await prepareGpuSubgraph(gpu, steps, {
    operands,
    needed: new Set([operands.length - 1]),
    relaxed,
  });
  const ms = await timeMs(() => subgraph.run(new Map([[0, input.value!]])));
  subgraph.destroy();
  return ms;
}

async function benchmark(implementation: GpuImplementation): Promise<void> {
  const gpu = await openGpu(implementation);
  if (!gpu) {
    console.log(`${implementation}: no adapter`);
    return;
  }
  console.log(
    `${implementation}: ${gpu.adapter.description} (shader-f16: ${gpu.adapter.shaderF16})`,
  );
  const rate = (macs: number, ms: number) => `${(macs / ms / 1e6).toFixed(2)} GMAC/s`;
  for (const make of LAYERS) {
    const layer = make();
    const single = await gpuSteps(gpu, layer, 1, false);
    const kernel = ((await gpuSteps(gpu, layer, 9, false)) - single) / 8;
    let line = `  ${layer.name} (${(layer.macs / 1e6).toFixed(1)} M MAC): gpu kernel ` +
      `${kernel.toFixed(2)} ms (${rate(layer.macs, kernel)}), run ${single.toFixed(2)} ms`;
    if (gpu.adapter.shaderF16 && layer.type !== "DEPTHWISE_CONV_2D") {
      const relaxedSingle = await gpuSteps(gpu, layer, 1, true);
      const relaxed = ((await gpuSteps(gpu, layer, 9, true)) - relaxedSingle) / 8;
      line += `; relaxed ${relaxed.toFixed(2)} ms (${rate(layer.macs, relaxed)})`;
    }
    if (layer.cpu) {
      const cpu = await timeMs(layer.cpu);
      line += `; cpu manifest ${cpu.toFixed(2)} ms (${rate(layer.macs, cpu)})`;
    }
    console.log(line);
  }
  gpu.close();
}

const chosen = Deno.args.length > 0 ? Deno.args : GPU_IMPLEMENTATIONS;
for (const implementation of chosen) {
  if (!(GPU_IMPLEMENTATIONS as readonly string[]).includes(implementation)) {
    throw new Error(`unknown implementation ${implementation}; choose from ${GPU_IMPLEMENTATIONS}`);
  }
  await benchmark(implementation as GpuImplementation);
}
