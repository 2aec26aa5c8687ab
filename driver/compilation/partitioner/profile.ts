/**
 * Profile-guided partitioning (the TVM NNAPI RFC's profiling partitioner, without the
 * phone): at preparation the model is run, on seeded sample inputs, once per allowed device
 * with every operation that device supports placed on it (the rest on the fallback CPU), in
 * an executor (never on the server's thread). The measured time of each operation on each
 * device replaces the static estimate; the partitioner then searches as usual, transfers
 * still costed from calibration. A run of operations on a device with memory of its own is
 * timed as one unit; its time, less the calibrated fixed cost of one round trip (charged as
 * transfers instead), is shared among its operations by their estimated work.
 */
import { seededFloats } from "../../../kernels/seeded_random.ts";
import { allocate, elementCount, isFloatType } from "../../../nnapi/tensor.ts";
import { DriverError } from "../../../nnapi/errors.ts";
import {
  representativeInputs,
  representativeShapes,
  shapedGraph,
} from "../../model/shape_inference.ts";
import type { Device, DeviceCosts } from "../../devices/device.ts";
import { stepOperands } from "../../devices/host_device.ts";
import { FALLBACK_DEVICE } from "../../devices/device_list.ts";
import type { RunInput } from "../plan.ts";
import type { StepTiming } from "../plan.ts";
import type { Model } from "../../model/model.ts";
import { operationWork } from "../../../operations/operation.ts";
import { operationDefinition } from "../../../operations/table.ts";
import type { PreparedModel } from "../plan.ts";
import { supportingDevices } from "./placement.ts";

/** Runs a plan once in an executor and reports each operation's (or device unit's) time. */
export type PlanProfiler = (plan: PreparedModel, inputs: RunInput[]) => Promise<StepTiming[]>;

/** Runs of each probe plan; the fastest counts (the first also warms the kernels up). */
const RUNS = 3;

/**
 * Seeded sample inputs of the model's input `shapes` (extents known only at execution given
 * the representative values static costing gives them: `representativeInputs`); undefined
 * when an input's rank is unknown.
 */
function sampleInputs(model: Model, shapes: readonly number[][]): RunInput[] | undefined {
  const inputs: RunInput[] = [];
  for (const [k, i] of model.inputIndexes.entries()) {
    const { type, dimensions } = model.operands[i];
    if (dimensions.length === 0 && type.startsWith("TENSOR_")) return undefined;
    const shape = shapes[k];
    const count = elementCount(shape);
    const data = allocate(type, count);
    if (isFloatType(type)) data.set(seededFloats(count, k + 1, 2) as never);
    inputs.push({ data, shape });
  }
  return inputs;
}

/**
 * Measured µs per operation (model index) and device, or undefined when the model cannot be
 * profiled (an input of unknown rank, or sample inputs of representative extents it does not
 * take). `prepare` builds a plan for a placement.
 */
export async function profileModel(
  model: Model,
  devices: readonly Device[],
  options: {
    costs: ReadonlyMap<string, DeviceCosts>;
    prepare(placement: string[]): Promise<PreparedModel>;
    profiler: PlanProfiler;
  },
): Promise<Map<number, Record<string, number>> | undefined> {
  const inputShapes = representativeInputs(shapedGraph(model));
  if (!sampleInputs(model, inputShapes)) return undefined;
  const supporting = supportingDevices(model, devices);
  const shapes = representativeShapes(shapedGraph(model));
  const work = (k: number) => {
    const op = model.operations[k];
    const step = stepOperands(model, op);
    const inputs = step.inputs.map((t, j) => ({ ...t, shape: shapes[op.inputs[j]] }));
    const outputs = step.outputs.map((t, j) => ({ ...t, shape: shapes[op.outputs[j]] }));
    return Math.max(1, operationWork(operationDefinition(op.type)!, inputs, outputs));
  };
  const measured = new Map<number, Record<string, number>>();
  for (const device of devices) {
    const name = device.info.name;
    const placement = model.runOrder.map((k) =>
      supporting[k].includes(device) ? name : FALLBACK_DEVICE.info.name
    );
    if (!placement.includes(name)) continue;
    const plan = await options.prepare(placement);
    const best = new Map<number, number>();
    for (let run = 0; run < RUNS; run++) {
      // Inputs are handed to the executor (transferred), so each run gets its own.
      let timings: StepTiming[];
      try {
        timings = await options.profiler(plan, sampleInputs(model, inputShapes)!);
      } catch (error) {
        if (!(error instanceof DriverError) || error.status !== "INVALID_ARGUMENT") throw error;
        // The representative extents do not fit the model: static costs instead.
        console.warn(`nnserve: profiling ran into ${error.message}; static costs instead`);
        return undefined;
      }
      for (const timing of timings) {
        if (timing.device !== name) continue; // another device's filler, or a fallback
        const roundTrip = options.costs.get(name)?.transfer?.fixedMicros ?? 0;
        const unitUs = Math.max(timing.onDeviceUs - roundTrip, timing.onDeviceUs * 0.01);
        const total = timing.operations.reduce((n, k) => n + work(k), 0);
        for (const k of timing.operations) {
          const us = unitUs * work(k) / total;
          best.set(k, Math.min(best.get(k) ?? Infinity, us));
        }
      }
    }
    for (const [k, us] of best) measured.set(k, { ...measured.get(k), [name]: us });
  }
  return measured;
}
