/**
 * Device units: runs of consecutive plan steps on a device with memory of its own (the
 * gpu), which an executor prepares in its own thread and runs as one unit there (inputs
 * uploaded, only what other steps or the caller read downloaded).
 */
import { DriverError } from "../../nnapi/errors.ts";
import type { Tensor, TensorData } from "../../nnapi/tensor.ts";
import type { RunnableSubgraph, SubgraphRuntime } from "../devices/device.ts";
import { subgraphRuntime } from "../devices/device_list.ts";
import type { PreparedModel, PreparedStep, StepTiming, UnitArtifact } from "../compilation/plan.ts";

/** Consecutive steps [start, end) on a device with memory of its own, run as one unit. */
export interface DeviceUnit {
  device: string;
  runtime: SubgraphRuntime;
  start: number;
  end: number;
  /** Prepared in this thread on first use; null when it could not be. */
  runnable?: Promise<RunnableSubgraph | null>;
  /** Why it could not be prepared. */
  failure?: string;
}

/** The plan's device units by their first step. */
export function deviceUnits(steps: readonly PreparedStep[]): Map<number, DeviceUnit> {
  const units = new Map<number, DeviceUnit>();
  let current: DeviceUnit | undefined;
  steps.forEach((step, s) => {
    const runtime = subgraphRuntime(step.device);
    if (!runtime) {
      current = undefined;
      return;
    }
    if (current?.device === step.device) current.end = s + 1;
    else {
      current = { device: step.device, runtime, start: s, end: s + 1 };
      units.set(s, current);
    }
  });
  return units;
}

/** The operands the caller or the plan's steps outside `unit` read. */
export function readOutside(
  unit: DeviceUnit,
  graph: {
    outputIndexes: readonly number[];
    steps: readonly { inputs: readonly number[] }[];
  },
): Set<number> {
  return new Set([
    ...graph.outputIndexes,
    ...graph.steps.filter((_, s) => s < unit.start || s >= unit.end).flatMap((t) => t.inputs),
  ]);
}

/**
 * Prepares a device unit of the plan's main graph in this thread for operands of `shapes`,
 * with the constants the executable holds; null (its steps run on the reference kernels)
 * when it cannot.
 */
export async function prepareUnit(
  unit: DeviceUnit,
  prepared: PreparedModel,
  operands: {
    constants: readonly (TensorData | undefined)[];
    shapes: readonly (readonly number[])[];
    /** Whether `shapes` are the plan's own: its unit artifacts then apply. */
    planned?: boolean;
    /** Whether to leave an artifact for the compilation cache. */
    keepArtifact?: boolean;
  },
): Promise<RunnableSubgraph | null> {
  const { constants, shapes } = operands;
  const artifact = operands.planned
    ? prepared.unitArtifacts?.find((a) => a.step === unit.start)?.bytes
    : undefined;
  const steps = prepared.steps.slice(unit.start, unit.end);
  const produced = new Set(steps.flatMap((step) => step.outputs));
  const outside = readOutside(unit, prepared);
  try {
    return await unit.runtime.prepare(steps, {
      operands: prepared.operands.map((o, i) => ({
        ...o,
        declaredShape: o.shape,
        shape: shapes[i],
        value: o.lifetime === "NO_VALUE" ? null : constants[i],
      })),
      needed: new Set([...produced].filter((i) => outside.has(i))),
      relaxed: prepared.relaxComputationFloat32toFloat16,
      ...(artifact ? { artifact } : {}),
      ...(operands.keepArtifact ? { keepArtifact: true } : {}),
    });
  } catch (error) {
    unit.failure = `${unit.device} failed to prepare it (${(error as Error).message})`;
    console.warn(
      `nnserve: ${unit.device} could not prepare steps ${unit.start}-${unit.end - 1} ` +
        `(${(error as Error).message}); running them on the reference kernels`,
    );
    return null;
  }
}

/**
 * Writes a unit run's results into the run's tensors, each checked to have the elements its
 * tensor has (a device that takes extents as they come computes its own output shapes).
 */
export function storeUnitResults(
  unit: DeviceUnit,
  results: ReadonlyMap<number, TensorData>,
  tensors: readonly (Tensor | undefined)[],
): void {
  for (const [i, data] of results) {
    const target = tensors[i]!.data as TensorData;
    if (data.length !== target.length) {
      throw new DriverError(
        "GENERAL_FAILURE",
        `${unit.device} gave operand ${i} ${data.length} elements, not ${target.length}`,
      );
    }
    target.set(data as never);
  }
}

/** What preparing a plan's units ahead of its runs found: failures, and artifacts to keep. */
export interface PreparedUnits {
  /** Units that could not be prepared, as timing entries naming their operations and why. */
  failed: StepTiming[];
  artifacts: UnitArtifact[];
}

/**
 * Prepares `units` of the plan's own shapes now (sessions, pipelines) rather than at their
 * first runs, each leaving its artifact for the compilation cache.
 */
export async function prepareUnits(
  units: Iterable<DeviceUnit>,
  prepared: PreparedModel,
  operands: {
    constants: readonly (TensorData | undefined)[];
    shapes: readonly (readonly number[])[];
  },
): Promise<PreparedUnits> {
  const failed: StepTiming[] = [];
  const artifacts: UnitArtifact[] = [];
  for (const unit of units) {
    const runnable = await (unit.runnable ??= prepareUnit(unit, prepared, {
      ...operands,
      planned: true,
      keepArtifact: true,
    }));
    if (runnable?.artifact) artifacts.push({ step: unit.start, bytes: runnable.artifact });
    if (runnable) continue;
    failed.push({
      device: unit.device,
      operations: prepared.steps.slice(unit.start, unit.end).map((step) => step.operation),
      onDeviceUs: 0,
      fallback: unit.failure ?? `${unit.device} failed to prepare it`,
    });
  }
  return { failed, artifacts };
}
