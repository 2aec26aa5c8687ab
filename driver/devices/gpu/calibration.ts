/**
 * The gpu device's capabilities, measured at start rather than invented: a short run of
 * the real execution path (prepared subgraphs, uploads, downloads) on this adapter, and of
 * the reference CPU kernel on the same convolution for the ratio NNAPI's PerformanceInfo
 * expresses (execution time relative to the reference CPU). About 0.3 s on llvmpipe, most
 * of it Deno's 10 ms polling of each run's read-back.
 */
import { elementCount, type TensorData } from "../../../nnapi/tensor.ts";
import { PADDING_SAME } from "../../../nnapi/types.ts";
import { operationDefinition } from "../../../operations/table.ts";
import type { GpuContext } from "./context.ts";
import { type GpuOperand, type GpuStep, prepareGpuSubgraph } from "./subgraph.ts";

/** What the calibration measured; all times are medians of a few runs after a warm-up. */
export interface GpuCalibration {
  /**
   * GPU µs per multiply-add of a float32 CONV_2D (1x32x32x32, 3x3 filter, 32 channels):
   * the time a run of 1 + CHAINED such steps takes over a run of 1, per added step, so
   * the fixed cost of a run cancels out.
   */
  gpuMicrosPerMac: number;
  /** µs per multiply-add of the reference CPU kernel on the same convolution. */
  cpuMicrosPerMac: number;
  /** Fixed µs of one run: submit, one upload, one download, the wait for completion. */
  transferMicros: number;
  /** µs per byte crossing between host and GPU (uploaded or downloaded). */
  transferMicrosPerByte: number;
  /** Wall time of the whole calibration, ms. */
  elapsedMs: number;
}

const RUNS = 3;
const SMALL_ELEMENTS = 4;
const LARGE_ELEMENTS = 1 << 16;
/** Extents of the calibration convolution (SAME padding, so it can feed itself). */
const CONV = { size: 32, depth: 32, filter: 3 };
const CONV_MACS = CONV.size * CONV.size * CONV.depth * CONV.filter * CONV.filter * CONV.depth;
/** Convolutions added to the chain whose extra time is the compute measurement. */
const CHAINED = 3;

function tensor(shape: number[], value?: TensorData): GpuOperand {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, ...(value ? { value } : {}) };
}

function int32(value: number): GpuOperand {
  return { type: "INT32", shape: [], scale: 0, zeroPoint: 0, value: Int32Array.of(value) };
}

/** Deterministic values in [-1, 1) (a calibration needs no randomness, only non-zeros). */
function ramp(length: number): Float32Array {
  return Float32Array.from({ length }, (_, i) => ((i * 7919) % 2048) / 1024 - 1);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1];
}

/** Median µs of `RUNS` calls after one warm-up call. */
async function timeRuns(run: () => unknown): Promise<number> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    await run();
    times.push((performance.now() - start) * 1000);
  }
  return median(times);
}

/** µs of a subgraph run, from upload to download. */
async function timeSubgraph(
  gpu: GpuContext,
  steps: GpuStep[],
  operands: GpuOperand[],
): Promise<number> {
  const subgraph = await prepareGpuSubgraph(gpu, steps, {
    operands,
    needed: new Set(steps[steps.length - 1].outputs),
  });
  try {
    const inputs = new Map(
      subgraph.inputs.map((i) => [i, ramp(elementCount(operands[i].shape))] as const),
    );
    return await timeRuns(() => subgraph.run(inputs));
  } finally {
    subgraph.destroy();
  }
}

/** µs of a RESHAPE round trip of `elements` float32 values (upload, copy, download). */
function timeRoundTrip(gpu: GpuContext, elements: number): Promise<number> {
  const shape: GpuOperand = {
    type: "TENSOR_INT32",
    shape: [1],
    scale: 0,
    zeroPoint: 0,
    value: Int32Array.of(elements),
  };
  const operands = [tensor([elements]), tensor([elements]), shape];
  return timeSubgraph(gpu, [{ type: "RESHAPE", inputs: [0, 2], outputs: [1] }], operands);
}

/** `count` chained calibration convolutions: operand 0 in, the last operand out. */
function convolutions(count: number): { operands: GpuOperand[]; steps: GpuStep[] } {
  const { size, depth, filter } = CONV;
  const filterShape = [depth, filter, filter, depth];
  const image = [1, size, size, depth];
  const operands = [
    tensor(image),
    tensor(filterShape, ramp(elementCount(filterShape)).map((v) => v / 16)),
    tensor([depth], ramp(depth)),
    ...[PADDING_SAME, 1, 1, 0].map(int32),
  ];
  const steps: GpuStep[] = [];
  let previous = 0;
  for (let k = 0; k < count; k++) {
    operands.push(tensor(image));
    const output = operands.length - 1;
    steps.push({ type: "CONV_2D", inputs: [previous, 1, 2, 3, 4, 5, 6], outputs: [output] });
    previous = output;
  }
  return { operands, steps };
}

/**
 * µs of the convolution on the reference CPU kernel (what NNAPI's PerformanceInfo is
 * relative to).
 */
function timeCpuConvolution(): Promise<number> {
  const { operands, steps } = convolutions(1);
  const step = steps[0];
  const tensors = step.inputs.map((i) => ({
    ...operands[i],
    data: operands[i].value ?? ramp(elementCount(operands[i].shape)),
  }));
  const info = operands[step.outputs[0]];
  const output = { ...info, data: new Float32Array(elementCount(info.shape)) };
  const definition = operationDefinition("CONV_2D")!;
  return timeRuns(() => definition.execute(tensors, [output]));
}

/**
 * Measures the adapter (four prepared subgraphs, each run `RUNS` + 1 times) and the CPU
 * reference kernel on the same convolution. Bytes per round trip count both directions.
 */
export async function calibrateGpu(gpu: GpuContext): Promise<GpuCalibration> {
  const start = performance.now();
  const small = await timeRoundTrip(gpu, SMALL_ELEMENTS);
  const large = await timeRoundTrip(gpu, LARGE_ELEMENTS);
  const perByte = Math.max(0, (large - small) / (8 * (LARGE_ELEMENTS - SMALL_ELEMENTS)));
  const fixed = Math.max(0, small - perByte * 8 * SMALL_ELEMENTS);
  const one = convolutions(1);
  const chain = convolutions(1 + CHAINED);
  const single = await timeSubgraph(gpu, one.steps, one.operands);
  const chained = await timeSubgraph(gpu, chain.steps, chain.operands);
  // Noise can make the difference tiny or negative; a run's whole time bounds it below.
  const perConv = Math.max((chained - single) / CHAINED, chained / (1 + CHAINED) / 4);
  const cpuConv = await timeCpuConvolution();
  return {
    gpuMicrosPerMac: perConv / CONV_MACS,
    cpuMicrosPerMac: cpuConv / CONV_MACS,
    transferMicros: fixed,
    transferMicrosPerByte: perByte,
    elapsedMs: performance.now() - start,
  };
}
