/**
 * Start-up calibration of the host devices (capabilities are measured, not invented): each
 * runs one fixed float32 FULLY_CONNECTED workload through its own implementation, best of a
 * few runs. The result is µs per unit of work (`operationWork`: multiply-adds, taps, or
 * element operations), which the partitioner scales by each operation's work; NNAPI's
 * `PerformanceInfo.execTime` is the same number relative to the reference device's.
 */
import { seededFloats } from "../../kernels/seeded_random.ts";
import { fullyConnected } from "../../operations/fully_connected.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { Device, DeviceCosts, PerformanceInfo, StepOperands } from "./device.ts";

const BATCH = 8;
const DEPTH = 256;
const UNITS = 256;
const RUNS = 5;

/** Measures a host device's float32 speed; undefined when it cannot run the workload. */
export function calibrateHostDevice(device: Device): DeviceCosts | undefined {
  const implementation = device.implementation("FULLY_CONNECTED");
  const tensor = (shape: number[], data: Float32Array | Int32Array): Tensor => ({
    type: data instanceof Int32Array ? "INT32" : "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    data,
  });
  const inputs = [
    tensor([BATCH, DEPTH], seededFloats(BATCH * DEPTH, 1, 2)),
    tensor([UNITS, DEPTH], seededFloats(UNITS * DEPTH, 2, 0.1)),
    tensor([UNITS], seededFloats(UNITS, 3, 0.1)),
    tensor([], Int32Array.of(0)),
  ];
  const output = tensor([BATCH, UNITS], new Float32Array(BATCH * UNITS));
  const step: StepOperands = {
    inputs: inputs.map((t, i) => ({ ...t, value: i === 0 ? undefined : t.data })),
    outputs: [output],
  };
  if (!implementation?.supports(step)) return undefined;
  const packed = implementation.pack?.(step) ?? [];
  const kernel = implementation.bind(step, packed) ?? fullyConnected.execute;
  let best = Infinity;
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    kernel(inputs, [output]);
    best = Math.min(best, performance.now() - started);
  }
  return { microsPerWork: Math.max(best, 0.001) * 1000 / (BATCH * DEPTH * UNITS) };
}

/**
 * NNAPI capabilities from measured costs: `execTime` relative to the reference device's µs
 * per unit of work; `powerUsage` the same, as every device here draws power in proportion to
 * its busy time.
 */
export function measuredPerformance(costs: DeviceCosts, reference: DeviceCosts): PerformanceInfo {
  const ratio = costs.microsPerWork / reference.microsPerWork;
  return { execTime: ratio, powerUsage: ratio };
}
