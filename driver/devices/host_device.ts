/**
 * Devices that run their kernels in host memory on an executor's own thread: they share
 * one memory space, so tensors pass between them without copies, and their steps are bound
 * synchronously. The reference CPU and the SIMD CPU are two of them, differing only in
 * their step tables.
 */
import type { Model, Operation } from "../model/model.ts";
import { halAtLeast, type HalVersion, type OperationType } from "../../nnapi/types.ts";
import type {
  ChainFusion,
  Device,
  DeviceInfo,
  PerformanceInfo,
  StepImplementation,
  StepOperands,
  StepTable,
} from "./device.ts";

/** The memory space of host devices. */
export const HOST_MEMORY = "host";

/** NNAPI feature level of each HAL version. */
const FEATURE_LEVELS: Record<HalVersion, number> = { V1_0: 27, V1_1: 28, V1_2: 29, V1_3: 30 };

/** Until calibration measures it, a device performs as the reference. */
const UNMEASURED: PerformanceInfo = { execTime: 1, powerUsage: 1 };

/** The operands of one model operation as devices see them (constants with values). */
export function stepOperands(model: Model, operation: Operation): StepOperands {
  return {
    inputs: operation.inputs.map((i) => {
      const operand = model.operands[i];
      return {
        ...operand,
        shape: operand.dimensions,
        value: operand.lifetime === "NO_VALUE" ? null : operand.value,
      };
    }),
    outputs: operation.outputs.map((i) => ({
      ...model.operands[i],
      shape: model.operands[i].dimensions,
    })),
  };
}

/** A host-memory device over its step table. */
export function hostDevice(options: {
  name: string;
  version: string;
  halVersion: HalVersion;
  steps: StepTable;
  chains?: ChainFusion;
}): Device {
  const { name, version, halVersion, steps, chains } = options;
  const table = steps as Partial<Record<OperationType, StepImplementation>>;
  const info: DeviceInfo = {
    name,
    type: "CPU",
    version,
    featureLevel: FEATURE_LEVELS[halVersion],
    halVersion,
    capabilities: {
      relaxedFloat32toFloat16PerformanceScalar: UNMEASURED,
      relaxedFloat32toFloat16PerformanceTensor: UNMEASURED,
      operandPerformance: {},
    },
    supportedOperations: Object.keys(steps) as OperationType[],
    numberOfCacheFilesNeeded: { modelCache: 1, dataCache: 1 },
  };
  return {
    info,
    memorySpace: HOST_MEMORY,
    supportedOperations(model) {
      return model.operations.map((op) =>
        op.supported && halAtLeast(halVersion, op.halVersion) &&
        (table[op.type]?.supports(stepOperands(model, op)) ?? false)
      );
    },
    implementation: (type) => table[type],
    ...(chains ? { chains } : {}),
  };
}
