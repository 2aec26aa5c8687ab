/**
 * `gpu`: WebGPU (`navigator.gpu`) with the WGSL kernels of `kernels/`, listed only when an
 * adapter is found. Its costs are measured at start (`calibration.ts`): compute per unit of
 * work and the fixed and per-byte cost of moving tensors to and from its memory, which the
 * partitioner weighs against the host devices. Executors run its subgraphs through
 * `gpuRuntime`, which opens a context of their own thread on first use.
 */
import { halAtLeast } from "../../../nnapi/types.ts";
import type { Model } from "../../model/model.ts";
import type {
  Device,
  DeviceCosts,
  DeviceInfo,
  PerformanceInfo,
  RunnableSubgraph,
  SubgraphOperand,
  SubgraphRuntime,
} from "../device.ts";
import { calibrateGpu } from "./calibration.ts";
import { type GpuContext, openGpu } from "./context.ts";
import { gpuOperationTypes } from "./kernels/mod.ts";
import { prepareGpuSubgraph, supportsOnGpu } from "./subgraph.ts";

/** The gpu device's name and version (part of every cache key that uses it). */
export const GPU_DEVICE_NAME = "gpu";
export const GPU_VERSION = "0.1.0";
/** The memory space of the gpu device: tensors cross to and from the host. */
export const GPU_MEMORY = "gpu";

/** The model's operands as the gpu device sees them. */
function operandsOf(model: Model): SubgraphOperand[] {
  return model.operands.map((o) => ({
    type: o.type,
    shape: o.dimensions,
    scale: o.scale,
    zeroPoint: o.zeroPoint,
    value: o.lifetime === "NO_VALUE" ? null : o.value,
  }));
}

/** A subgraph runtime over a context opened when first needed (once per thread). */
function runtimeOver(context: () => Promise<GpuContext | null>): SubgraphRuntime {
  return {
    async prepare(steps, options): Promise<RunnableSubgraph> {
      const gpu = await context();
      if (!gpu) throw new Error("no WebGPU adapter in this thread");
      return await prepareGpuSubgraph(gpu, steps, options);
    },
  };
}

let executorContext: Promise<GpuContext | null> | undefined;

/** The gpu runtime of an executor thread. */
export const gpuRuntime: SubgraphRuntime = runtimeOver(() => executorContext ??= openGpu());

let discovered: Promise<{ device: Device; costs: DeviceCosts } | undefined> | undefined;

/**
 * The gpu device with its measured costs, or undefined when there is no adapter; opened
 * and calibrated once per process. `referenceMicrosPerWork` (the reference CPU's) makes its
 * NNAPI capabilities relative.
 */
export function discoverGpu(
  referenceMicrosPerWork: number,
): Promise<{ device: Device; costs: DeviceCosts } | undefined> {
  return discovered ??= (async () => {
    const gpu = await openGpu();
    if (!gpu) return undefined;
    const calibration = await calibrateGpu(gpu);
    const costs: DeviceCosts = {
      microsPerWork: calibration.gpuMicrosPerMac,
      transfer: {
        fixedMicros: calibration.transferMicros,
        microsPerByte: calibration.transferMicrosPerByte,
      },
    };
    const ratio = costs.microsPerWork / referenceMicrosPerWork;
    const performance: PerformanceInfo = { execTime: ratio, powerUsage: ratio };
    const halVersion = "V1_2";
    const info: DeviceInfo = {
      name: GPU_DEVICE_NAME,
      type: "GPU",
      version: GPU_VERSION,
      featureLevel: 29,
      halVersion,
      capabilities: {
        relaxedFloat32toFloat16PerformanceScalar: performance,
        relaxedFloat32toFloat16PerformanceTensor: performance,
        operandPerformance: { TENSOR_FLOAT32: performance },
      },
      supportedOperations: gpuOperationTypes(),
      numberOfCacheFilesNeeded: { modelCache: 1, dataCache: 1 },
    };
    const device: Device = {
      info,
      memorySpace: GPU_MEMORY,
      supportedOperations(model) {
        const operands = operandsOf(model);
        return model.operations.map((op) =>
          op.supported && halAtLeast(halVersion, op.halVersion) && supportsOnGpu(op, operands)
        );
      },
      implementation: () => undefined,
      subgraphs: runtimeOver(() => Promise.resolve(gpu)),
    };
    return { device, costs };
  })();
}
