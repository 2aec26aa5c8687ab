/**
 * `cpu-simd`: the generated WebAssembly SIMD kernels (relaxed-SIMD FMA where the engine has
 * it, plain JS otherwise; `kernels/manifest.ts`) for the operations and forms they cover —
 * today float32 CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED with constant weights on
 * static shapes. Everything else is reported unsupported, so the partitioner gives it to
 * another device; both CPUs share host memory, so switching between them costs nothing.
 */
import type { StepTable } from "../device.ts";
import { hostDevice } from "../host_device.ts";
import { conv2dSimd, depthwiseConv2dSimd } from "./convolution.ts";
import { fullyConnectedSimd } from "./fully_connected.ts";

/** Version of the SIMD device: part of every cache key that uses it. */
export const CPU_SIMD_VERSION = "0.1.0";

const STEPS = {
  CONV_2D: conv2dSimd,
  DEPTHWISE_CONV_2D: depthwiseConv2dSimd,
  FULLY_CONNECTED: fullyConnectedSimd,
} satisfies StepTable;

/** The SIMD CPU device. */
export const cpuSimd = hostDevice({
  name: "cpu-simd",
  version: CPU_SIMD_VERSION,
  halVersion: "V1_2",
  steps: STEPS,
});
