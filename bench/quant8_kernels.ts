/**
 * Quant8 (uint8, per-tensor) convolution kernels on MobileNet-v1 layers: the reference
 * kernels (Android 10 integer arithmetic) against `cpu-simd`'s WebAssembly SIMD forms bound
 * to packed weights, on the same seeded bytes in the same run; the outputs must be equal
 * byte for byte. Times are medians after a warm-up; the ratio is reference / SIMD.
 */
import { seededFloats } from "../kernels/seeded_random.ts";
import type { Tensor } from "../nnapi/tensor.ts";
import { conv2d } from "../operations/conv_2d.ts";
import { depthwiseConv2d } from "../operations/depthwise_conv_2d.ts";
import { fullyConnected } from "../operations/fully_connected.ts";
import type { Kernel, OperationDefinition } from "../operations/operation.ts";
import type { StepImplementation } from "../driver/devices/device.ts";
import {
  conv2dQuant8,
  depthwiseConv2dQuant8,
  fullyConnectedQuant8,
} from "../driver/devices/cpu_simd/quantized.ts";
import { same, time } from "./kernels.ts";

function quant8(shape: number[], seed: number, scale: number, zeroPoint: number): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = Uint8Array.from(seededFloats(n, seed, 256), (v) => Math.floor(v) + 128);
  return { type: "TENSOR_QUANT8_ASYMM", shape, scale, zeroPoint, data };
}

function int32(v: number): Tensor {
  return { type: "INT32", shape: [], scale: 0, zeroPoint: 0, data: Int32Array.of(v) };
}

function bias(channels: number, scale: number): Tensor {
  const data = Int32Array.from(seededFloats(channels, 9, 8000), Math.round);
  return { type: "TENSOR_INT32", shape: [channels], scale, zeroPoint: 0, data };
}

interface Layer {
  name: string;
  macs: number;
  definition: OperationDefinition;
  implementation: StepImplementation;
  inputs: Tensor[];
  output: Tensor;
}

const INPUT_SCALE = 0.5, FILTER_SCALE = 0.006;

function convLayer(
  name: string,
  size: number,
  inDepth: number,
  filter: number,
  stride: number,
  outDepth: number,
): Layer {
  const g = same(size, inDepth, filter, stride, outDepth);
  const out = g.outHeight * g.outWidth * outDepth;
  return {
    name,
    macs: out * filter * filter * inDepth,
    definition: conv2d,
    implementation: conv2dQuant8,
    inputs: [
      quant8([1, size, size, inDepth], 1, INPUT_SCALE, 3),
      quant8([outDepth, filter, filter, inDepth], 2, FILTER_SCALE, 131),
      bias(outDepth, INPUT_SCALE * FILTER_SCALE),
      ...[1, stride, stride, 3].map(int32),
    ],
    output: quant8([1, g.outHeight, g.outWidth, outDepth], 0, 8, 120),
  };
}

function depthwiseLayer(name: string, size: number, depth: number, stride: number): Layer {
  const g = same(size, depth, 3, stride, depth);
  return {
    name,
    macs: g.outHeight * g.outWidth * depth * 9,
    definition: depthwiseConv2d,
    implementation: depthwiseConv2dQuant8,
    inputs: [
      quant8([1, size, size, depth], 3, INPUT_SCALE, 3),
      quant8([1, 3, 3, depth], 4, FILTER_SCALE, 131),
      bias(depth, INPUT_SCALE * FILTER_SCALE),
      ...[1, stride, stride, 1, 3].map(int32),
    ],
    output: quant8([1, g.outHeight, g.outWidth, depth], 0, 2, 120),
  };
}

function fullyConnectedLayer(name: string, inputSize: number, units: number): Layer {
  return {
    name,
    macs: inputSize * units,
    definition: fullyConnected,
    implementation: fullyConnectedQuant8,
    inputs: [
      quant8([1, inputSize], 5, INPUT_SCALE, 3),
      quant8([units, inputSize], 6, FILTER_SCALE, 131),
      bias(units, INPUT_SCALE * FILTER_SCALE),
      int32(0),
    ],
    output: quant8([1, units], 0, 40, 120),
  };
}

/** The SIMD kernel bound to weights packed as preparation packs them. */
function bound(layer: Layer): Kernel {
  const step = {
    inputs: layer.inputs.map((t, i) => ({ ...t, value: i === 0 ? undefined : t.data })),
    outputs: [layer.output],
  };
  const kernel = layer.implementation.bind(step, layer.implementation.pack!(step)!);
  if (!kernel) throw new Error(`${layer.name}: no quant8 SIMD kernel bound`);
  return kernel;
}

/** Prints reference and SIMD times per layer, their ratio, and checks the bytes agree. */
export function quant8Kernels(): Promise<void> {
  console.log("layer (quant8)                      reference ms   simd ms   GMAC/s  speedup");
  for (
    const layer of [
      convLayer("conv 3x3/2 224x224x3->32", 224, 3, 3, 2, 32),
      depthwiseLayer("dwconv 3x3/1 112x112x32", 112, 32, 1),
      convLayer("pointwise 1x1 112x112x32->64", 112, 32, 1, 1, 64),
      depthwiseLayer("dwconv 3x3/2 112x112x64", 112, 64, 2),
      convLayer("pointwise 1x1 14x14x512->512", 14, 512, 1, 1, 512),
      depthwiseLayer("dwconv 3x3/1 14x14x512", 14, 512, 1),
      fullyConnectedLayer("fully connected 1024->1000", 1024, 1000),
    ]
  ) {
    const kernel = bound(layer);
    const want = { ...layer.output, data: new Uint8Array(layer.output.data!.length) };
    const got = { ...layer.output, data: new Uint8Array(layer.output.data!.length) };
    const reference = time(() => layer.definition.execute(layer.inputs, [want]), 1, 3);
    const simd = time(() => kernel(layer.inputs, [got]));
    const equal = want.data.every((v, i) => v === got.data[i]);
    console.log(
      `${layer.name.padEnd(34)} ${reference.toFixed(2).padStart(12)} ${
        simd.toFixed(3).padStart(9)
      } ` +
        `${(layer.macs / simd / 1e6).toFixed(2).padStart(8)} ${
          (reference / simd).toFixed(1).padStart(7)
        }x` +
        (equal ? "" : "  OUTPUT DIFFERS FROM THE REFERENCE"),
    );
    if (!equal) throw new Error(`${layer.name}: the SIMD bytes differ from the reference`);
  }
  return Promise.resolve();
}

if (import.meta.main) await quant8Kernels();
