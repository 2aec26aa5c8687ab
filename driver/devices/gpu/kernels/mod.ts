/**
 * The manifest of the gpu device's WGSL kernels: one entry per operation it runs, with the
 * kernel's name (datatype, operation, tiling, as the CPU manifest names them), its builder,
 * the tensor inputs it needs as constants at preparation (weights it re-lays out) and, for
 * kernels a following RELU can fold into, how to read the step's own fused activation.
 * `satisfies` lets the compiler check each entry is keyed by its own operation.
 */
import type { OperationType } from "../../../../nnapi/types.ts";
import type { PrepareInput } from "../../../../operations/operation.ts";
import type { KernelBuilder } from "./common.ts";
import { conv2dKernel, convolutionActivation } from "./convolution.ts";
import { depthwiseConv2dKernel } from "./depthwise.ts";
import { binaryKernel, unaryKernel } from "./elementwise.ts";
import { fullyConnectedActivation, fullyConnectedKernel } from "./fully_connected.ts";
import { poolKernel } from "./pooling.ts";
import { concatenationKernel, reshapeKernel } from "./shape.ts";
import { softmaxKernel } from "./softmax.ts";

/** One operation's GPU kernel. */
export interface GpuKernelEntry {
  name: string;
  build: KernelBuilder;
  /** Float tensor inputs that must be constants (beyond scalars, which always must). */
  constantInputs: readonly number[];
  /**
   * The step's fused activation code, for kernels whose output clamp can take a following
   * RELU step's instead (`KernelOptions.foldedRelu`) when it is NONE.
   */
  fusedActivation?: (inputs: readonly PrepareInput[]) => number;
}

const GPU_KERNELS = {
  CONV_2D: {
    name: "f32_conv2d_igemm_4x4_wgsl",
    build: conv2dKernel,
    constantInputs: [1, 2],
    fusedActivation: convolutionActivation("CONV_2D"),
  },
  DEPTHWISE_CONV_2D: {
    name: "f32_dwconv2d_vec4_wgsl",
    build: depthwiseConv2dKernel,
    constantInputs: [],
    fusedActivation: convolutionActivation("DEPTHWISE_CONV_2D"),
  },
  FULLY_CONNECTED: {
    name: "f32_gemm_4x4_wgsl",
    build: fullyConnectedKernel,
    constantInputs: [],
    fusedActivation: fullyConnectedActivation,
  },
  ADD: { name: "f32_add_broadcast_wgsl", build: binaryKernel("ADD"), constantInputs: [] },
  MUL: { name: "f32_mul_broadcast_wgsl", build: binaryKernel("MUL"), constantInputs: [] },
  AVERAGE_POOL_2D: {
    name: "f32_average_pool2d_wgsl",
    build: poolKernel("AVERAGE_POOL_2D"),
    constantInputs: [],
  },
  MAX_POOL_2D: {
    name: "f32_max_pool2d_wgsl",
    build: poolKernel("MAX_POOL_2D"),
    constantInputs: [],
  },
  L2_POOL_2D: { name: "f32_l2_pool2d_wgsl", build: poolKernel("L2_POOL_2D"), constantInputs: [] },
  SOFTMAX: { name: "f32_softmax_row_wgsl", build: softmaxKernel, constantInputs: [] },
  CONCATENATION: {
    name: "f32_concatenation_wgsl",
    build: concatenationKernel,
    constantInputs: [],
  },
  RESHAPE: { name: "f32_reshape_copy", build: reshapeKernel, constantInputs: [] },
  RELU: { name: "f32_relu_wgsl", build: unaryKernel("RELU"), constantInputs: [] },
  RELU1: { name: "f32_relu1_wgsl", build: unaryKernel("RELU1"), constantInputs: [] },
  RELU6: { name: "f32_relu6_wgsl", build: unaryKernel("RELU6"), constantInputs: [] },
  LOGISTIC: { name: "f32_logistic_wgsl", build: unaryKernel("LOGISTIC"), constantInputs: [] },
  TANH: { name: "f32_tanh_wgsl", build: unaryKernel("TANH"), constantInputs: [] },
} satisfies Partial<Record<OperationType, GpuKernelEntry>>;

/** The operations the gpu device has kernels for. */
export type GpuOperationType = keyof typeof GPU_KERNELS;

/** The kernel of an operation type, or undefined when the gpu device has none. */
export function gpuKernel(type: OperationType): GpuKernelEntry | undefined {
  return (GPU_KERNELS as Partial<Record<OperationType, GpuKernelEntry>>)[type];
}

/** Every operation type the gpu device has a kernel for (for `supportedOperations`). */
export function gpuOperationTypes(): GpuOperationType[] {
  return Object.keys(GPU_KERNELS) as GpuOperationType[];
}
