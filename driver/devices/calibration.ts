/**
 * Start-up calibration of the host devices (capabilities are measured, not invented): each
 * runs one fixed float32 workload per operation class through its own implementation — a
 * 3x3 CONV_2D (matrix products), a 3x3 DEPTHWISE_CONV_2D (windows), an ADD (element-wise
 * and other memory-bound work) and a TRANSPOSE (data movement) — warmed up, then the fastest
 * of several runs (what the machine can do, not how busy it is at start: a service started
 * beside other work must plan as one started alone), 0.1 s per workload at most (under 0.1 s
 * for all of them here). The result is µs per unit of work
 * (`operationWork`: multiply-adds, taps, or elements) per class, which the partitioner
 * scales by each operation's work; NNAPI's `PerformanceInfo.execTime` is the matrix-product
 * number relative to the reference device's. Only plans depend on these numbers, never a
 * cache key (that is device names and versions).
 */
import { seededFloats } from "../../kernels/seeded_random.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { OperationType } from "../../nnapi/types.ts";
import { type Kernel, operationWork } from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";
import type {
  Device,
  DeviceCosts,
  OperationClass,
  PerformanceInfo,
  StepOperands,
} from "./device.ts";

/** Warm-up runs of a workload (the engine tiers a kernel up after its first calls). */
const WARMUP_RUNS = 5;
/** Timed runs of a workload at most. */
const RUNS = 9;
/** Time one workload may take in all (warm-up included), in ms; 3 timed runs at least. */
const WORKLOAD_BUDGET_MS = 100;

function tensor(shape: number[], data: Float32Array | Int32Array): Tensor {
  const type = data instanceof Float32Array
    ? "TENSOR_FLOAT32"
    : shape.length === 0
    ? "INT32"
    : "TENSOR_INT32";
  return { type, shape, scale: 0, zeroPoint: 0, data };
}

const scalar = (v: number) => tensor([], Int32Array.of(v));
const floats = (shape: number[], seed: number, scale = 1) =>
  tensor(shape, seededFloats(shape.reduce((a, b) => a * b, 1), seed, scale));
const output = (shape: number[]) =>
  tensor(shape, new Float32Array(shape.reduce((a, b) => a * b, 1)));

/** One workload: an operation on fixed operands (inputs after the first are constants). */
interface Workload {
  type: OperationType;
  inputs: Tensor[];
  outputs: Tensor[];
}

/** The workload of each operation class. */
function workloads(): Record<Exclude<OperationClass, "control">, Workload> {
  return {
    // 16x16x32 -> 32 channels, 3x3, SAME: 2.4 M multiply-adds.
    gemm: {
      type: "CONV_2D",
      inputs: [
        floats([1, 16, 16, 32], 1, 2),
        floats([32, 3, 3, 32], 2, 0.1),
        floats([32], 3, 0.1),
        scalar(1),
        scalar(1),
        scalar(1),
        scalar(0),
      ],
      outputs: [output([1, 16, 16, 32])],
    },
    // 32x32x64, 3x3, SAME: 590 k taps.
    window: {
      type: "DEPTHWISE_CONV_2D",
      inputs: [
        floats([1, 32, 32, 64], 4, 2),
        floats([1, 3, 3, 64], 5, 0.1),
        floats([64], 6, 0.1),
        scalar(1),
        scalar(1),
        scalar(1),
        scalar(1),
        scalar(0),
      ],
      outputs: [output([1, 32, 32, 64])],
    },
    // 64 k elements each way.
    elementwise: {
      type: "ADD",
      inputs: [floats([1, 32, 32, 64], 7), floats([1, 32, 32, 64], 8), scalar(0)],
      outputs: [output([1, 32, 32, 64])],
    },
    movement: {
      type: "TRANSPOSE",
      inputs: [floats([1, 32, 32, 64], 9), tensor([4], Int32Array.of(0, 3, 1, 2))],
      outputs: [output([1, 64, 32, 32])],
    },
  };
}

/** µs per unit of work of `device` on `workload`, or undefined when it does not run it. */
function measure(device: Device, workload: Workload): number | undefined {
  const implementation = device.implementation(workload.type);
  const definition = operationDefinition(workload.type)!;
  const step: StepOperands = {
    // Every input after the first is a constant (weights, parameters), as in a model.
    inputs: workload.inputs.map((t, i) => ({ ...t, value: i === 0 ? undefined : t.data })),
    outputs: workload.outputs,
  };
  if (!implementation?.supports(step)) return undefined;
  const packed = implementation.pack?.(step) ?? [];
  const kernel: Kernel = implementation.bind(step, packed) ?? definition.execute;
  const work = operationWork(definition, step.inputs, step.outputs);
  const budgetEnd = performance.now() + WORKLOAD_BUDGET_MS;
  for (let run = 0; run < WARMUP_RUNS && (run < 1 || performance.now() < budgetEnd - 50); run++) {
    kernel(workload.inputs, workload.outputs);
  }
  const times: number[] = [];
  while (times.length < RUNS && (times.length < 3 || performance.now() < budgetEnd)) {
    const started = performance.now();
    kernel(workload.inputs, workload.outputs);
    times.push(performance.now() - started);
  }
  const fastest = Math.min(...times);
  // A timer's resolution is no speed: at least a microsecond per workload.
  return Math.max(fastest, 0.001) * 1000 / work;
}

/**
 * Measures a host device's float32 speed per operation class; undefined when it cannot run
 * the matrix-product workload.
 */
export function calibrateHostDevice(device: Device): DeviceCosts | undefined {
  const perClass: Partial<Record<OperationClass, number>> = {};
  for (const [kind, workload] of Object.entries(workloads())) {
    const micros = measure(device, workload);
    if (micros !== undefined) perClass[kind as OperationClass] = micros;
  }
  if (perClass.gemm === undefined) return undefined;
  return { microsPerWork: perClass.gemm, perClass };
}

/**
 * NNAPI capabilities from measured costs: `execTime` relative to the reference device's µs
 * per unit of matrix-product work; `powerUsage` the same, as every device here draws power in
 * proportion to its busy time.
 */
export function measuredPerformance(costs: DeviceCosts, reference: DeviceCosts): PerformanceInfo {
  const ratio = costs.microsPerWork / reference.microsPerWork;
  return { execTime: ratio, powerUsage: ratio };
}
