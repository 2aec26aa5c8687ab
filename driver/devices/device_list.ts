/**
 * The device list: adding a device is a folder beside this file and one line here. Executors
 * look devices up by the name a plan's step carries, so every device an executor can bind
 * is constructed here, synchronously.
 */
import { PLAN_FORMAT } from "../compilation/plan_codec.ts";
import { cpuReference } from "./cpu_reference/device.ts";
import { cpuSimd } from "./cpu_simd/device.ts";
import { calibrateHostDevice, measuredPerformance } from "./calibration.ts";
import type { Device, DeviceCosts, SubgraphRuntime } from "./device.ts";
import { discoverGpu, GPU_DEVICE_NAME, gpuRuntime } from "./gpu/device.ts";

/** The host devices, in preference order (ties in cost go to the earlier one). */
export const HOST_DEVICES: readonly Device[] = [cpuSimd, cpuReference];

/** The device that takes over a step another device fails to prepare (NNAPI's CPU fallback). */
export const FALLBACK_DEVICE: Device = cpuReference;

/** The device a plan's step names, if this build has it. */
export function deviceNamed(name: string): Device | undefined {
  return HOST_DEVICES.find((device) => device.info.name === name);
}

/**
 * The driver version the compilation cache is bound to: a change of plan format or of a
 * device's version resets the cache map, so caches written by another build are never used.
 */
export const DRIVER_VERSION = `nnserve/plan-${PLAN_FORMAT}/${
  HOST_DEVICES.map((d) => `${d.info.name}@${d.info.version}`).join("+")
}`;

let measured: Map<string, DeviceCosts> | undefined;

/**
 * The host devices' costs, measured once per process (a few milliseconds at the first
 * server start), and their NNAPI capabilities set from them, relative to `cpu-reference`.
 */
export function hostDeviceCosts(): ReadonlyMap<string, DeviceCosts> {
  if (measured) return measured;
  measured = new Map();
  for (const device of HOST_DEVICES) {
    const costs = calibrateHostDevice(device);
    if (costs) measured.set(device.info.name, costs);
  }
  const reference = measured.get(cpuReference.info.name)!;
  for (const device of HOST_DEVICES) {
    const costs = measured.get(device.info.name);
    if (!costs) continue;
    const performance = measuredPerformance(costs, reference);
    const { capabilities } = device.info;
    capabilities.relaxedFloat32toFloat16PerformanceScalar = performance;
    capabilities.relaxedFloat32toFloat16PerformanceTensor = performance;
    capabilities.operandPerformance = { TENSOR_FLOAT32: performance };
  }
  return measured;
}

/** The execution entry of a device with memory of its own, by name (for executors). */
export function subgraphRuntime(name: string): SubgraphRuntime | undefined {
  return name === GPU_DEVICE_NAME ? gpuRuntime : undefined;
}

/** The devices of this machine, in preference order, with their measured costs. */
export interface DeviceSet {
  devices: readonly Device[];
  costs: ReadonlyMap<string, DeviceCosts>;
}

/**
 * The host devices and, unless `gpu` is false, the gpu device where an adapter is found;
 * each measured once per process.
 */
export async function discoverDevices(options: { gpu: boolean }): Promise<DeviceSet> {
  const costs = new Map(hostDeviceCosts());
  const devices = [...HOST_DEVICES];
  const gpu = options.gpu
    ? await discoverGpu(costs.get(cpuReference.info.name)!.microsPerWork)
    : undefined;
  if (gpu) {
    devices.push(gpu.device);
    costs.set(gpu.device.info.name, gpu.costs);
  }
  return { devices, costs };
}
