/**
 * The device list and every lookup of a device by name. Adding a device is a folder beside
 * this file and one line here. Executors look devices up by the name a plan's step carries
 * (`hostStepImplementation`, `subgraphRuntime`), so every device an executor can bind is
 * constructed here, synchronously; the compiler looks them up in the service's
 * {@link DeviceSet}.
 */
import { invalid } from "../../nnapi/errors.ts";
import type { OperationType } from "../../nnapi/types.ts";
import { cpuReference } from "./cpu_reference/device.ts";
import { cpuSimd } from "./cpu_simd/device.ts";
import { calibrateHostDevice, measuredPerformance } from "./calibration.ts";
import type { Device, DeviceCosts, StepImplementation, SubgraphRuntime } from "./device.ts";
import { discoverGpu, GPU_DEVICE_NAME, gpuRuntime } from "./gpu/device.ts";
import {
  discoverOnnxruntime,
  ONNXRUNTIME_DEVICE_NAME,
  onnxruntimeRuntime,
} from "./onnxruntime/device.ts";

/** The host devices, in preference order (ties in cost go to the earlier one). */
export const HOST_DEVICES: readonly Device[] = [cpuSimd, cpuReference];

/** Every device this build can offer, by name (the host devices, then those it discovers). */
export const DEVICE_NAMES: readonly string[] = [
  ...HOST_DEVICES.map((d) => d.info.name),
  ONNXRUNTIME_DEVICE_NAME,
  GPU_DEVICE_NAME,
];

/** The device that takes over a step another device fails to prepare (NNAPI's CPU fallback). */
export const FALLBACK_DEVICE: Device = cpuReference;

/** The host device a plan's step names, if this build has it. */
export function hostDeviceNamed(name: string): Device | undefined {
  return HOST_DEVICES.find((device) => device.info.name === name);
}

/** How the host device `device` runs an operation of `type` (none for other devices). */
export function hostStepImplementation(
  device: string,
  type: OperationType,
): StepImplementation | undefined {
  return hostDeviceNamed(device)?.implementation(type);
}

/** The execution entry of a device with memory of its own, by name (for executors). */
export function subgraphRuntime(name: string): SubgraphRuntime | undefined {
  if (name === GPU_DEVICE_NAME) return gpuRuntime;
  return name === ONNXRUNTIME_DEVICE_NAME ? onnxruntimeRuntime : undefined;
}

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

/** The devices of this machine, in preference order, with their measured costs. */
export class DeviceSet {
  /** The devices, in preference order. */
  readonly list: readonly Device[];
  readonly costs: ReadonlyMap<string, DeviceCosts>;

  constructor(list: readonly Device[], costs: ReadonlyMap<string, DeviceCosts>) {
    this.list = list;
    this.costs = costs;
  }

  /** The host devices, measured once per process. */
  static host(): DeviceSet {
    return new DeviceSet(HOST_DEVICES, hostDeviceCosts());
  }

  /** The device named `name`, if the set has it. */
  named(name: string): Device | undefined {
    return this.list.find((d) => d.info.name === name);
  }

  /**
   * The named devices in the service's preference order (all when none are named); unknown
   * names are invalid.
   */
  select(names: readonly string[] | undefined): Device[] {
    if (!names || names.length === 0) return [...this.list];
    names.forEach((name, i) => {
      if (!this.named(name)) throw invalid(`unknown device "${name}"`, { path: ["devices", i] });
    });
    return this.list.filter((d) => names.includes(d.info.name));
  }

  /**
   * A stored record's device names that the set still has; none left (a record from before
   * the device seam named the one device of its day) means every device.
   */
  known(names: readonly string[]): string[] {
    const known = names.filter((name) => this.named(name));
    return known.length > 0 ? known : this.list.map((d) => d.info.name);
  }
}

/**
 * The host devices, the onnxruntime device where onnxruntime-node loads and, unless `gpu` is
 * false, the gpu device where an adapter is found. Each is measured once per process. With
 * `names`, only the devices named (one log line for each named device not found here).
 */
export async function discoverDevices(
  options: { gpu?: boolean; names?: readonly string[] },
): Promise<DeviceSet> {
  const { names } = options;
  const wanted = (name: string) => !names || names.includes(name);
  const costs = new Map(hostDeviceCosts());
  const devices = HOST_DEVICES.filter((d) => wanted(d.info.name));
  const reference = costs.get(cpuReference.info.name)!.microsPerWork;
  const found = [
    wanted(ONNXRUNTIME_DEVICE_NAME) ? await discoverOnnxruntime(reference) : undefined,
    options.gpu !== false && wanted(GPU_DEVICE_NAME) ? await discoverGpu(reference) : undefined,
  ];
  for (const extra of found) {
    if (!extra) continue;
    devices.push(extra.device);
    costs.set(extra.device.info.name, extra.costs);
  }
  for (const name of names ?? []) {
    if (!devices.some((d) => d.info.name === name)) {
      console.warn(`nnserve: the device ${name} is not available here; it is not offered`);
    }
  }
  return new DeviceSet(devices, costs);
}
