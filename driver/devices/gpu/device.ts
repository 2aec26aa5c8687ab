/**
 * `gpu`: WebGPU (Dawn where it opens, else Deno's `navigator.gpu`: `context.ts`) with the
 * WGSL kernels of `kernels/`, listed only when an adapter is found; its version names the
 * implementation ("0.1.0+dawn"), so plans and cache entries of the two never mix. Its costs are measured at start (`calibration.ts`): compute per unit of
 * work and the fixed and per-byte cost of moving tensors to and from its memory, which the
 * partitioner weighs against the host devices. Executors run its subgraphs through
 * `gpuRuntime`, which opens a context of their own thread on first use.
 */
import type { Device, DeviceCosts, RunnableSubgraph, SubgraphRuntime } from "../device.ts";
import { subgraphDevice } from "../subgraph_device.ts";
import { calibrateGpu } from "./calibration.ts";
import { type GpuContext, openGpu } from "./context.ts";
import { gpuOperationTypes } from "./kernels/mod.ts";
import { prepareGpuSubgraph, supportsOnGpu } from "./subgraph.ts";

/**
 * The gpu device's name, and its version before the implementation's name (the version is
 * part of every cache key that uses the device).
 */
export const GPU_DEVICE_NAME = "gpu";
export const GPU_VERSION = "0.1.0";
/** The memory space of the gpu device: tensors cross to and from the host. */
export const GPU_MEMORY = "gpu";

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
    const device = subgraphDevice({
      name: GPU_DEVICE_NAME,
      type: "GPU",
      version: `${GPU_VERSION}+${gpu.implementation}`,
      halVersion: "V1_2",
      memorySpace: GPU_MEMORY,
      costs,
      referenceMicrosPerWork,
      operationTypes: gpuOperationTypes(),
      supports: supportsOnGpu,
      runtime: runtimeOver(() => Promise.resolve(gpu)),
    });
    return { device, costs };
  })();
}
