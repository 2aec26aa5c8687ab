/**
 * The partitioner applied to a model: each operation's cost on each device that supports it
 * (its estimated work times the device's measured µs per unit of work of its operation
 * class), the cost of moving
 * tensors between memory spaces, and the result as a placement (a device per step of the run
 * order) plus the plan a client sees. Every execution preference gets the latency plan (see
 * `partitioner.ts`).
 */
import type { Device, DeviceCosts } from "../../devices/device.ts";
import { microsPerWork } from "../../devices/operation_classes.ts";
import { HOST_MEMORY, stepOperands } from "../../devices/host_device.ts";
import type { Model } from "../../model/model.ts";
import { operationWork } from "../../../operations/operation.ts";
import { operationDefinition } from "../../../operations/table.ts";
import { byteSize, isFullySpecified, type TensorInfo } from "../../../nnapi/tensor.ts";
import { representativeShapes, shapedGraph } from "../../model/shape_inference.ts";
import { type Partition, partition, type PartitionProblem, reassign } from "./partitioner.ts";
import { checkSupported, supportingDevices } from "./placement.ts";

/** One step of a visible plan: a run of operations on one device. */
export interface PartitionStepSummary {
  device: string;
  /** Model operation indexes, in run order. */
  operations: number[];
  /** Operands it takes from other steps or the caller, and gives to later steps or back. */
  inputs: number[];
  outputs: number[];
  /** Operands moved between memory spaces for it. */
  transfers: { operand: number; from: string; to: string; bytes: number }[];
  /** Its compute plus its transfers, in µs. */
  estimatedCost: number;
  /**
   * When its kernels are bound to shapes: at preparation (every shape of its operations is
   * known then) or per shape (each executor binds them for each new set of input shapes).
   */
  binds: "at preparation" | "per shape";
  /** Set when the chosen device failed to prepare it and this device took over. */
  fallback?: string;
}

/** The plan a compilation reports (`GET /v1/compilations/{id}`). */
export interface PartitionSummary {
  /** What the plan minimises: one execution's latency, whatever the execution preference. */
  objective: "latency";
  /** Where the costs come from: estimates (work x measured speed) or profiling this model. */
  costs: "static" | "profile";
  /** The sum of the steps' costs, in µs. */
  estimatedCost: number;
  /** Device changes along the run order. */
  switches: number;
  /** Whether an exhaustive search chose it (no cheaper plan exists). */
  optimal: boolean;
  steps: PartitionStepSummary[];
}

/** Measured costs where profiling measured the operation on some device, else estimates. */
function measuredOrEstimated(
  measured: Record<string, number> | undefined,
  estimate: () => Record<string, number>,
): Record<string, number> {
  return measured && Object.keys(measured).length > 0 ? measured : estimate();
}

/**
 * The cheapest placement of the model's operations on `devices` (in preference order); a
 * model some operation of which none of them supports is INVALID_ARGUMENT naming every such
 * operation.
 */
export function partitionModel(
  model: Model,
  devices: readonly Device[],
  options: {
    costs: ReadonlyMap<string, DeviceCosts>;
    /**
     * Measured µs per operation (model index) and device, from profiling; they replace the
     * static estimates, and a device missing for an operation is not used for it.
     */
    measured?: ReadonlyMap<number, Record<string, number>>;
  },
): ModelPartition {
  const supporting = supportingDevices(model, devices);
  checkSupported(model, supporting, devices);
  const costsOf = (device: Device) => options.costs.get(device.info.name) ?? { microsPerWork: 1 };
  const transferOf = new Map(devices.map((d) => [d.memorySpace, costsOf(d).transfer]));
  // Extents known only at execution are costed with representative values.
  const shapes = representativeShapes(shapedGraph(model));
  const shaped = <T extends TensorInfo>(info: T, i: number): T => ({ ...info, shape: shapes[i] });
  const problem: PartitionProblem = {
    // A device of its own memory runs each of its subgraphs as a unit (`device_units.ts`):
    // inputs taken anew, what later steps read handed back.
    devices: devices.map((d) => ({
      name: d.info.name,
      memorySpace: d.memorySpace,
      transient: d.subgraphs !== undefined,
    })),
    operations: model.runOrder.map((k) => {
      const op = model.operations[k];
      const step = stepOperands(model, op);
      const work = operationWork(
        operationDefinition(op.type)!,
        step.inputs.map((input, j) => shaped(input, op.inputs[j])),
        step.outputs.map((output, j) => shaped(output, op.outputs[j])),
      );
      return {
        index: k,
        inputs: op.inputs,
        outputs: op.outputs,
        costs: measuredOrEstimated(options.measured?.get(k), () =>
          Object.fromEntries(
            supporting[k].map((d) => [d.info.name, work * microsPerWork(costsOf(d), op.type)]),
          )),
      };
    }),
    operandBytes: model.operands.map((o, i) => byteSize(o.type, shapes[i])),
    modelInputs: model.inputIndexes,
    modelOutputs: model.outputIndexes,
    hostSpace: HOST_MEMORY,
    // Between two devices' spaces a tensor goes through the host (an executor downloads it
    // into its arena, then uploads it): both legs.
    transferCost(from, to, bytes) {
      const leg = (space: string) => {
        const transfer = space === HOST_MEMORY ? undefined : transferOf.get(space);
        return transfer ? transfer.fixedMicros + bytes * transfer.microsPerByte : 0;
      };
      return leg(from) + leg(to);
    },
  };
  const costSource = options.measured ? "profile" : "static";
  return modelPartition(
    { model, problem, costSource },
    partition(problem),
  );
}

/** Whether every operand of operation `k` has its shape known before execution. */
function shapesKnown(model: Model, k: number): boolean {
  const { inputs, outputs } = model.operations[k];
  return [...inputs, ...outputs].every((i) => isFullySpecified(model.operands[i].dimensions));
}

/** A model's partition: placement, its summary (the plan a client sees), and the fallback of a failed step. */
export interface ModelPartition {
  placement: string[];
  summary: PartitionSummary;
  /** The same partition with step `step` moved to `device` (NNAPI's CPU fallback). */
  fallBack(step: number, device: string, reason: string): ModelPartition;
}

function modelPartition(
  context: { model: Model; problem: PartitionProblem; costSource: "static" | "profile" },
  result: Partition,
  fallbacks: ReadonlyMap<number, string> = new Map(),
): ModelPartition {
  const { model, problem } = context;
  const deviceOf = new Map<number, string>();
  for (const subgraph of result.subgraphs) {
    for (const k of subgraph.operations) deviceOf.set(k, subgraph.device);
  }
  return {
    placement: model.runOrder.map((k) => deviceOf.get(k)!),
    summary: {
      objective: "latency",
      costs: context.costSource,
      estimatedCost: result.cost,
      switches: result.switches,
      optimal: result.optimal,
      steps: result.subgraphs.map((g) => {
        const fallback = g.operations.map((k) => fallbacks.get(k)).find(Boolean);
        return {
          device: g.device,
          operations: g.operations,
          inputs: g.inputs,
          outputs: g.outputs,
          transfers: g.transfers.map(({ operand, from, to, bytes }) => ({
            operand,
            from,
            to,
            bytes,
          })),
          estimatedCost: g.cost,
          binds: g.operations.every((k) => shapesKnown(model, k)) ? "at preparation" : "per shape",
          ...(fallback ? { fallback } : {}),
        };
      }),
    },
    fallBack(step, device, reason) {
      const moved = reassign(problem, { partition: result, subgraph: step, device });
      const notes = new Map(fallbacks);
      for (const k of result.subgraphs[step].operations) notes.set(k, reason);
      return modelPartition(context, moved, notes);
    },
  };
}
