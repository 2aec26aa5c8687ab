/**
 * The devices the driver exposes (NNAPI `IDevice`): name, type, version, feature level and
 * capabilities. Today one reference CPU device; the partitioner will choose among several.
 */
import { implementedOperations } from "./operations/registry.ts";
import type { Model } from "./model.ts";
import { PLAN_FORMAT } from "./plan_codec.ts";
import { halAtLeast, type HalVersion, type OperationType } from "../nnapi/types.ts";

/** NNAPI `PerformanceInfo`: relative to the reference CPU (lower is better). */
export interface PerformanceInfo {
  execTime: number;
  powerUsage: number;
}

/** What `GET /v1/devices` reports per device. */
export interface DeviceInfo {
  name: string;
  type: "CPU" | "GPU" | "ACCELERATOR" | "OTHER";
  version: string;
  featureLevel: number;
  halVersion: HalVersion;
  capabilities: {
    relaxedFloat32toFloat16PerformanceScalar: PerformanceInfo;
    relaxedFloat32toFloat16PerformanceTensor: PerformanceInfo;
    operandPerformance: Record<string, PerformanceInfo>;
  };
  supportedOperations: OperationType[];
  numberOfCacheFilesNeeded: { modelCache: number; dataCache: number };
}

/** Version of the reference CPU device. */
export const CPU_DEVICE_VERSION = "0.1.0";

/**
 * The driver version the compilation cache is bound to: a change (device version or plan
 * format) resets the cache map, so caches written by another version are never used.
 */
export const DRIVER_VERSION = `nnserve-cpu/${CPU_DEVICE_VERSION}/plan-${PLAN_FORMAT}`;

const REFERENCE_PERFORMANCE: PerformanceInfo = { execTime: 1, powerUsage: 1 };

/** A device: its public description and which operations of a model it can run. */
export interface Device {
  readonly info: DeviceInfo;
  supportedOperations(model: Model): boolean[];
}

/** The reference CPU device running the typed-array kernels. */
export function createCpuDevice(): Device {
  const featureLevels: Record<HalVersion, number> = { V1_0: 27, V1_1: 28, V1_2: 29, V1_3: 30 };
  const halVersion: HalVersion = "V1_2";
  const info: DeviceInfo = {
    name: "nnserve-cpu",
    type: "CPU",
    version: CPU_DEVICE_VERSION,
    featureLevel: featureLevels[halVersion],
    halVersion,
    capabilities: {
      relaxedFloat32toFloat16PerformanceScalar: REFERENCE_PERFORMANCE,
      relaxedFloat32toFloat16PerformanceTensor: REFERENCE_PERFORMANCE,
      operandPerformance: {
        TENSOR_FLOAT32: REFERENCE_PERFORMANCE,
        TENSOR_QUANT8_ASYMM: REFERENCE_PERFORMANCE,
        TENSOR_INT32: REFERENCE_PERFORMANCE,
      },
    },
    supportedOperations: implementedOperations(),
    numberOfCacheFilesNeeded: { modelCache: 1, dataCache: 1 },
  };
  return {
    info,
    supportedOperations(model) {
      return model.operations.map((op) => op.supported && halAtLeast(halVersion, op.halVersion));
    },
  };
}
