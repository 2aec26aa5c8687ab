/**
 * What the devices with memory of their own (`gpu`, `onnxruntime`) share: the model's
 * operands as their runtimes see them, and the device built from measured costs (NNAPI
 * capabilities relative to the reference CPU) and a per-operation support test.
 */
import { halAtLeast, type HalVersion, type OperationType } from "../../nnapi/types.ts";
import type { Model, Operation } from "../model/model.ts";
import type {
  Device,
  DeviceCosts,
  DeviceInfo,
  PerformanceInfo,
  SubgraphOperand,
  SubgraphRuntime,
} from "./device.ts";

/** The model's operands as a subgraph runtime sees them. */
export function operandsOf(model: Model): SubgraphOperand[] {
  return model.operands.map((o) => ({
    type: o.type,
    shape: o.dimensions,
    scale: o.scale,
    zeroPoint: o.zeroPoint,
    value: o.lifetime === "NO_VALUE" ? null : o.value,
  }));
}

/** A device that runs whole subgraphs in memory of its own. */
export function subgraphDevice(options: {
  name: string;
  type: DeviceInfo["type"];
  version: string;
  halVersion: HalVersion;
  memorySpace: string;
  costs: DeviceCosts;
  /** The reference CPU's µs per unit of work, which its capabilities are relative to. */
  referenceMicrosPerWork: number;
  operationTypes: OperationType[];
  /** Whether it runs this operation of the model (operands as `operandsOf` gives them). */
  supports(operation: Operation, operands: readonly SubgraphOperand[]): boolean;
  runtime: SubgraphRuntime;
}): Device {
  const ratio = options.costs.microsPerWork / options.referenceMicrosPerWork;
  const performance: PerformanceInfo = { execTime: ratio, powerUsage: ratio };
  const info: DeviceInfo = {
    name: options.name,
    type: options.type,
    version: options.version,
    featureLevel: 29,
    halVersion: options.halVersion,
    capabilities: {
      relaxedFloat32toFloat16PerformanceScalar: performance,
      relaxedFloat32toFloat16PerformanceTensor: performance,
      operandPerformance: { TENSOR_FLOAT32: performance },
    },
    supportedOperations: options.operationTypes,
    numberOfCacheFilesNeeded: { modelCache: 1, dataCache: 1 },
  };
  return {
    info,
    memorySpace: options.memorySpace,
    supportedOperations(model) {
      const operands = operandsOf(model);
      return model.operations.map((op) =>
        op.supported && halAtLeast(options.halVersion, op.halVersion) &&
        options.supports(op, operands)
      );
    },
    implementation: () => undefined,
    subgraphs: options.runtime,
  };
}
