/**
 * `cpu-simd`: the generated WebAssembly SIMD kernels (relaxed-SIMD FMA where the engine has
 * it, plain JS otherwise; `kernels/manifest.ts`) for the operations and forms they cover —
 * today float32 CONV_2D, DEPTHWISE_CONV_2D and TRANSPOSE_CONV_2D with constant weights,
 * FULLY_CONNECTED (weights constant or computed at execution), BATCH_MATMUL,
 * DYNAMIC_QUANTIZE_FULLY_CONNECTED (nnserve's extension; integers on the float GEMM), quant8
 * forms (uint8 or int8, per-tensor or per-channel filters; bit for bit the reference,
 * `quantized.ts`), and element-wise ADD, SUB, MUL, DIV, MINIMUM, MAXIMUM and HARD_SWISH.
 * Extents known only at execution are no obstacle: weights are packed at preparation, and
 * each executor binds the kernels per shape signature (`execution/shape_bindings.ts`); a
 * shape a kernel cannot take runs on the reference kernel for that execution. Everything
 * else is reported unsupported, so the partitioner gives it to another device; both CPUs
 * share host memory, so switching between them costs nothing.
 */
import type { StepTable } from "../device.ts";
import { hostDevice } from "../host_device.ts";
import { conv2dSimd, depthwiseConv2dSimd } from "./convolution.ts";
import { fullyConnectedSimd } from "./fully_connected.ts";
import {
  addSimd,
  divSimd,
  hardSwishStep,
  maximumSimd,
  minimumSimd,
  mulSimd,
  subSimd,
} from "./elementwise.ts";
import { transposeConv2dSimd } from "./transpose_conv.ts";
import { batchMatmulSimd } from "./batch_matmul.ts";
import { dynamicQuantizeFullyConnectedSimd } from "./dynamic_quantize_fc.ts";
import { elementwiseChains } from "./chains.ts";
import {
  byInputType,
  conv2dQuant8,
  depthwiseConv2dQuant8,
  fullyConnectedQuant8,
} from "./quantized.ts";

/** Version of the SIMD device: part of every cache key that uses it. */
export const CPU_SIMD_VERSION = "0.6.0";

const STEPS = {
  CONV_2D: byInputType(conv2dSimd, conv2dQuant8),
  DEPTHWISE_CONV_2D: byInputType(depthwiseConv2dSimd, depthwiseConv2dQuant8),
  FULLY_CONNECTED: byInputType(fullyConnectedSimd, fullyConnectedQuant8),
  ADD: addSimd,
  SUB: subSimd,
  MUL: mulSimd,
  DIV: divSimd,
  MINIMUM: minimumSimd,
  MAXIMUM: maximumSimd,
  HARD_SWISH: hardSwishStep,
  TRANSPOSE_CONV_2D: transposeConv2dSimd,
  BATCH_MATMUL: batchMatmulSimd,
  DYNAMIC_QUANTIZE_FULLY_CONNECTED: dynamicQuantizeFullyConnectedSimd,
} satisfies StepTable;

/** The SIMD CPU device. */
export const cpuSimd = hostDevice({
  name: "cpu-simd",
  version: CPU_SIMD_VERSION,
  // HARD_SWISH is an operation of HAL 1.3.
  halVersion: "V1_3",
  steps: STEPS,
  chains: elementwiseChains,
});
