/**
 * Float32 convolution kernels on MobileNet-v1 layers: the reference kernel (the executable
 * specification) against each optimized variant of the kernel manifest this engine runs,
 * on the same seeded data in the same run. Times are the median of several runs after a
 * warm-up (so V8 and wasm tiering have settled); the ratio is reference / optimized.
 * Weights are packed once before timing, as preparation does. A last line runs a whole
 * MobileNet v1 (224x224, 1000 classes) in process, through preparation and the executable,
 * with the packed kernels against the same plan without packed weights (reference kernels).
 */
import { Executable } from "../driver/execution/executable.ts";
import { MOBILENET_BLOCKS, seededFloats } from "./mobilenet.ts";
import { buildModel } from "../driver/model/model.ts";
import type { ModelJson } from "../driver/model/model_schema.ts";
import { prepareModel } from "../driver/compilation/prepare.ts";
import { conv2dFloat } from "../kernels/conv_2d.ts";
import type { Conv2dGeometry } from "../kernels/conv_common.ts";
import { depthwiseConv2dFloat, type DepthwiseGeometry } from "../kernels/conv_depthwise.ts";
import { packDepthwiseWeights, packGemmWeights } from "../kernels/f32_packing.ts";
import { fullyConnectedFloat } from "../kernels/fc_fully_connected.ts";
import { activationRangeFloat } from "../kernels/fixed_point.ts";
import {
  createF32Conv2d,
  createF32DepthwiseConv2d,
  createF32FullyConnected,
  F32_CONV_KERNELS,
  F32_DWCONV_KERNELS,
  F32_GEMM_KERNELS,
  isPointwise,
  type KernelIsa,
  type KernelVariant,
} from "../kernels/manifest.ts";
import { median } from "./peers/timing.ts";

const WARMUP = 2;
const RUNS = 7;
const RELU6 = activationRangeFloat(3);

/** Median milliseconds of `run` after a warm-up. */
export function time(run: () => void, warmup = WARMUP, runs = RUNS): number {
  for (let i = 0; i < warmup; i++) run();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    run();
    times.push(performance.now() - start);
  }
  return median(times);
}

/** Seeded floats in [-1, 1). */
function randomFloats(length: number, seed: number): Float32Array {
  return seededFloats(length, seed, 2);
}

/** A square NHWC convolution geometry with NNAPI SAME padding. */
export function same(
  size: number,
  inDepth: number,
  filter: number,
  stride: number,
  outDepth: number,
): Conv2dGeometry {
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
  };
}

interface Layer {
  name: string;
  /** Multiply-accumulates of one run. */
  macs: number;
  reference: () => void;
  /** Binds the layer's kernel for one instruction set (weights already packed). */
  optimized: (isa: KernelIsa) => () => void;
  /** Variant names per instruction set, for the report. */
  variants: readonly KernelVariant[];
}

function convLayer(name: string, g: Conv2dGeometry): Layer {
  const taps = g.filterHeight * g.filterWidth * g.inDepth;
  const input = randomFloats(g.batches * g.inHeight * g.inWidth * g.inDepth, 1);
  const filter = randomFloats(g.outDepth * taps, 2);
  const bias = randomFloats(g.outDepth, 3);
  const output = new Float32Array(g.batches * g.outHeight * g.outWidth * g.outDepth);
  const packed = packGemmWeights(filter, bias, { channels: g.outDepth, depth: taps });
  return {
    name,
    macs: output.length * taps,
    reference: () => conv2dFloat(g, input, filter, bias, RELU6, output),
    optimized: (isa) => {
      const run = createF32Conv2d(g, packed, { activation: RELU6, isa });
      return () => run(input, output);
    },
    variants: isPointwise(g) ? F32_GEMM_KERNELS : F32_CONV_KERNELS,
  };
}

function depthwiseLayer(name: string, g: Conv2dGeometry): Layer {
  const dg: DepthwiseGeometry = { ...g, depthMultiplier: 1 };
  const taps = g.filterHeight * g.filterWidth;
  const input = randomFloats(g.batches * g.inHeight * g.inWidth * g.inDepth, 4);
  const filter = randomFloats(taps * g.outDepth, 5);
  const bias = randomFloats(g.outDepth, 6);
  const output = new Float32Array(g.batches * g.outHeight * g.outWidth * g.outDepth);
  const packed = packDepthwiseWeights(filter, bias, { channels: g.outDepth, taps });
  return {
    name,
    macs: output.length * taps,
    reference: () => depthwiseConv2dFloat(dg, input, filter, bias, RELU6, output),
    optimized: (isa) => {
      const run = createF32DepthwiseConv2d(dg, packed, { activation: RELU6, isa });
      return () => run(input, output);
    },
    variants: F32_DWCONV_KERNELS,
  };
}

function fullyConnectedLayer(name: string, inputSize: number, units: number): Layer {
  const input = randomFloats(inputSize, 7);
  const weights = randomFloats(units * inputSize, 8);
  const bias = randomFloats(units, 9);
  const output = new Float32Array(units);
  const packed = packGemmWeights(weights, bias, { channels: units, depth: inputSize });
  const none = activationRangeFloat(0);
  const g = { batches: 1, inputSize, units };
  return {
    name,
    macs: inputSize * units,
    reference: () => fullyConnectedFloat(g, input, weights, bias, none, output),
    optimized: (isa) => {
      const shape = { rows: 1, depth: inputSize, channels: units };
      const run = createF32FullyConnected(shape, packed, { activation: none, isa });
      return () => run(input, output);
    },
    variants: F32_GEMM_KERNELS,
  };
}

function layers(): Layer[] {
  return [
    convLayer("conv 3x3/2 224x224x3->32", same(224, 3, 3, 2, 32)),
    depthwiseLayer("dwconv 3x3/1 112x112x32", same(112, 32, 3, 1, 32)),
    convLayer("pointwise 1x1 112x112x32->64", same(112, 32, 1, 1, 64)),
    depthwiseLayer("dwconv 3x3/2 112x112x64", same(112, 64, 3, 2, 64)),
    convLayer("pointwise 1x1 14x14x512->512", same(14, 512, 1, 1, 512)),
    depthwiseLayer("dwconv 3x3/1 14x14x512", same(14, 512, 3, 1, 512)),
    fullyConnectedLayer("fully connected 1024->1000", 1024, 1000),
  ];
}

const ISAS: readonly KernelIsa[] = ["scalar", "simd128", "relaxedsimd"];

/** MobileNet v1 as a model document: convolutions, average pool, fully connected. */
function mobileNet(): ModelJson {
  const operands: ModelJson["operands"] = [];
  const operations: ModelJson["operations"] = [];
  let seed = 100;
  const add = (operand: Omit<ModelJson["operands"][number], "scale" | "zeroPoint">) =>
    operands.push({ scale: 0, zeroPoint: 0, ...operand }) - 1;
  const scalar = (v: number) =>
    add({ type: "INT32", dimensions: [], lifetime: "CONSTANT_COPY", value: [v] });
  const tensor = (dimensions: number[], lifetime: "TEMPORARY_VARIABLE" | "MODEL_INPUT") =>
    add({ type: "TENSOR_FLOAT32", dimensions, lifetime });
  const weights = (dimensions: number[], fanIn: number) => {
    const values = randomFloats(dimensions.reduce((a, b) => a * b, 1), seed++)
      .map((w) => w / Math.sqrt(fanIn));
    const base64 = new Uint8Array(values.buffer).toBase64();
    return add({
      type: "TENSOR_FLOAT32",
      dimensions,
      lifetime: "CONSTANT_COPY",
      value: { base64 },
    });
  };
  const [same, valid, none, one, two, relu6] = [1, 2, 0, 1, 2, 3].map(scalar);
  const input = tensor([1, 224, 224, 3], "MODEL_INPUT");
  let size = 112, channels = 32;
  let x = tensor([1, size, size, channels], "TEMPORARY_VARIABLE");
  operations.push({
    type: "CONV_2D",
    inputs: [input, weights([32, 3, 3, 3], 27), weights([32], 1), same, two, two, relu6],
    outputs: [x],
  });
  for (const [out, stride] of MOBILENET_BLOCKS) {
    size = size / stride;
    const s = stride === 2 ? two : one;
    const dw = tensor([1, size, size, channels], "TEMPORARY_VARIABLE");
    operations.push({
      type: "DEPTHWISE_CONV_2D",
      inputs: [x, weights([1, 3, 3, channels], 9), weights([channels], 1), same, s, s, one, relu6],
      outputs: [dw],
    });
    const pw = tensor([1, size, size, out], "TEMPORARY_VARIABLE");
    operations.push({
      type: "CONV_2D",
      inputs: [
        dw,
        weights([out, 1, 1, channels], channels),
        weights([out], 1),
        same,
        one,
        one,
        relu6,
      ],
      outputs: [pw],
    });
    x = pw;
    channels = out;
  }
  const pooled = tensor([1, 1, 1, channels], "TEMPORARY_VARIABLE");
  operations.push({
    type: "AVERAGE_POOL_2D",
    inputs: [x, valid, one, one, scalar(size), scalar(size), none],
    outputs: [pooled],
  });
  const logits = add({ type: "TENSOR_FLOAT32", dimensions: [1, 1000], lifetime: "MODEL_OUTPUT" });
  operations.push({
    type: "FULLY_CONNECTED",
    inputs: [pooled, weights([1000, channels], channels), weights([1000], 1), none],
    outputs: [logits],
  });
  return {
    operands,
    operations,
    inputIndexes: [input],
    outputIndexes: [logits],
    relaxComputationFloat32toFloat16: false,
  };
}

/** Whole-network time with the packed kernels against the reference kernels. */
function wholeNetwork(): void {
  const prepared = prepareModel(buildModel(mobileNet()), {
    preference: "FAST_SINGLE_ANSWER",
    priority: "MEDIUM",
  });
  const unpacked = { ...prepared, steps: prepared.steps.map(({ packed: _, ...step }) => step) };
  const input = [{ data: randomFloats(224 * 224 * 3, 10), shape: [1, 224, 224, 3] }];
  const optimized = new Executable(prepared);
  const reference = new Executable(unpacked);
  const [want] = reference.run(input);
  const [got] = optimized.run(input);
  let difference = 0;
  for (let i = 0; i < want.data.length; i++) {
    difference = Math.max(difference, Math.abs(got.data[i] - want.data[i]));
  }
  const referenceMs = time(() => reference.run(input), 1, 3);
  const optimizedMs = time(() => optimized.run(input), 2, 7);
  console.log(
    `${"MobileNet v1 224x224 (whole)".padEnd(30)} ${"reference".padEnd(29)} ` +
      `${referenceMs.toFixed(2).padStart(7)}`,
  );
  console.log(
    `${"MobileNet v1 224x224 (whole)".padEnd(30)} ${"packed, best ISA".padEnd(29)} ` +
      `${optimizedMs.toFixed(2).padStart(7)}         ${(referenceMs / optimizedMs).toFixed(1)}x`,
  );
  console.log(`(largest |difference| of the 1000 logits: ${difference.toExponential(2)})`);
}

/** Prints reference and optimized times per layer and their ratio. */
export function kernels(): Promise<void> {
  console.log(
    "layer                          kernel                        ms      GMAC/s  speedup",
  );
  for (const layer of layers()) {
    const reference = time(layer.reference);
    const row = (kernel: string, ms: number) =>
      console.log(
        `${layer.name.padEnd(30)} ${kernel.padEnd(29)} ${ms.toFixed(2).padStart(7)} ` +
          `${(layer.macs / ms / 1e6).toFixed(2).padStart(7)} ` +
          `${(reference / ms).toFixed(1).padStart(7)}x`,
      );
    row("reference", reference);
    for (const isa of ISAS) {
      const variant = layer.variants.find((v) => v.isa === isa);
      if (!variant?.available()) continue;
      row(variant.name, time(layer.optimized(isa)));
    }
  }
  wholeNetwork();
  return Promise.resolve();
}

if (import.meta.main) await kernels();
