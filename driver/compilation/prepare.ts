/**
 * Preparation: turns a validated model into an explicit plan — run order, one step per
 * operation, weights packed for their kernels, every constant in one shared buffer, and an
 * arena layout for intermediate tensors when all shapes are known. A `PreparedModel` is
 * plain structured-clonable data: executor workers take it as it is, and the compilation
 * cache stores it as a JSON model cache plus the constant buffer as data cache.
 */
import { DriverError } from "../../nnapi/errors.ts";
import { align, type ArenaLayout, layoutArena, TENSOR_ALIGNMENT } from "./arena_layout.ts";
import { planChains } from "./chain_fusion.ts";
import type { StepImplementation } from "../devices/device.ts";
import { stepOperands } from "../devices/host_device.ts";
import {
  deviceNamed,
  FALLBACK_DEVICE,
  HOST_DEVICES,
  subgraphRuntime,
} from "../devices/device_list.ts";
import type { Model, Operand, Subgraph } from "../model/model.ts";
import type { PlanSummary } from "./partitioner/model_partition.ts";
import { placeByPreference } from "./partitioner/placement.ts";
import { operationDefinition } from "../../operations/table.ts";
import { type ChannelQuant, elementBytes, type TensorData, typedView } from "../../nnapi/tensor.ts";
import type { HalVersion, Lifetime, OperandType, OperationType } from "../../nnapi/types.ts";

/**
 * Where a tensor lies: in the plan's `smallConstants` (CONSTANT_COPY values: scalars, shape
 * tensors — anything that steers control flow, kept in the hash-protected model cache) or
 * in its `weights` (CONSTANT_REFERENCE tensors and packed weights: the data cache).
 */
export interface TensorRef {
  buffer: "small" | "weights";
  type: OperandType;
  /** Byte offset, aligned to {@link TENSOR_ALIGNMENT}. */
  offset: number;
  /** Element count. */
  length: number;
}

/** An operand as the plan sees it; `shape` may hold 0 for extents known only at execution. */
export interface PreparedOperand {
  type: OperandType;
  shape: number[];
  scale: number;
  zeroPoint: number;
  lifetime: Lifetime;
  channelQuant?: ChannelQuant;
  /** Constant data in the plan's constant buffer. */
  constant?: TensorRef;
  /**
   * For a constant kept only in packed form: the step whose packed weights hold it (its
   * operation's `unpack` rebuilds it).
   */
  packedIn?: number;
}

/** One operation of the plan, in run order. */
export interface PreparedStep {
  /** Index of the operation in the model (for messages). */
  operation: number;
  type: OperationType;
  /** The device that runs it (its name). */
  device: string;
  inputs: number[];
  outputs: number[];
  /** Weights its device packed at preparation, in the constant buffer. */
  packed?: TensorRef[];
  /**
   * On the first step of a run of consecutive steps its device fuses into one pass: how
   * many steps the run has (`chain_fusion.ts`).
   */
  chain?: number;
}

/** Options of NNAPI `prepareModel` that shape the plan. */
export interface PrepareOptions {
  preference: "LOW_POWER" | "FAST_SINGLE_ANSWER" | "SUSTAINED_SPEED";
  priority: "LOW" | "MEDIUM" | "HIGH";
}

/** One graph of a plan: its operands and its steps in run order. */
export interface PreparedGraph {
  operands: PreparedOperand[];
  steps: PreparedStep[];
  inputIndexes: number[];
  outputIndexes: number[];
}

/** The explicit execution plan of a compilation: the main graph's fields, and more. */
export interface PreparedModel extends PreparedGraph {
  /** Per model input: whether every operation reading it takes it as an optional input. */
  omittableInputs: boolean[];
  relaxComputationFloat32toFloat16: boolean;
  halVersion: HalVersion;
  /** Present when every intermediate shape is known at preparation. */
  arena?: ArenaLayout;
  /** Which device runs which operations, and what that was estimated to cost. */
  partition?: PlanSummary;
  options: PrepareOptions;
  /** CONSTANT_COPY values; shared with workers, never written after preparation. */
  smallConstants: SharedArrayBuffer;
  /** CONSTANT_REFERENCE values and packed weights; shared, never written after preparation. */
  weights: SharedArrayBuffer;
  /**
   * The model's referenced subgraphs (IF branches, WHILE conditions and bodies), indexed as
   * in the model; absent when it has none. Their constants live in the same two buffers;
   * their steps run on {@link REFERENCED_DEVICE}'s kernels, shapes inferred at execution.
   */
  referenced?: PreparedGraph[];
}

/**
 * The device whose kernels run the steps of referenced subgraphs: the host device that
 * runs IF and WHILE themselves (the partitioner places only the main graph's steps).
 */
export const REFERENCED_DEVICE = FALLBACK_DEVICE.info.name;

/** A plan without its weights: enough to check requests, shapes and buffer roles. */
export type Plan = Omit<PreparedModel, "weights">;

/** A typed view of a constant of the plan. */
export function constantView(prepared: PreparedModel, ref: TensorRef): TensorData {
  const buffer = ref.buffer === "small" ? prepared.smallConstants : prepared.weights;
  return typedView(ref.type, buffer, ref.offset, ref.length);
}

/**
 * Lays tensors out one after the other in a new shared buffer and copies them in, pausing
 * (see {@link preparationSteps}) after each tensor.
 */
function* packBuffer(
  name: TensorRef["buffer"],
  tensors: { type: OperandType; data: TensorData }[],
): Generator<string, { buffer: SharedArrayBuffer; refs: TensorRef[] }> {
  let total = 0;
  const refs = tensors.map(({ type, data }) => {
    const ref = { buffer: name, type, offset: total, length: data.length };
    total = align(total + data.length * elementBytes(type));
    return ref;
  });
  const buffer = new SharedArrayBuffer(Math.max(total, TENSOR_ALIGNMENT));
  for (const [i, { type, data }] of tensors.entries()) {
    typedView(type, buffer, refs[i].offset, refs[i].length).set(data as never);
    yield `while copying constants (${i + 1} of ${tensors.length} ${name} tensors copied)`;
  }
  return { buffer, refs };
}

/**
 * Lets each step's device pack the step's constant weights (static plans only), pausing
 * after each operation.
 */
function* packWeights(
  model: Model,
  steps: readonly PreparedStep[],
  staticPlan: boolean,
): Generator<string, (TensorData[] | undefined)[]> {
  const packed: (TensorData[] | undefined)[] = [];
  for (const step of steps) {
    const op = model.operations[step.operation];
    const implementation = stepImplementation(step);
    if (!staticPlan || !implementation?.pack) {
      packed.push(undefined);
      yield `after operation ${step.operation} (${op.type})`;
      continue;
    }
    packed.push(implementation.pack(stepOperands(model, op)));
    yield `after packing the weights of operation ${step.operation} (${op.type})`;
  }
  return packed;
}

/** Whether every step runs on a host device (so the plan may run on any thread, at once). */
export function runsOnHost(plan: Plan): boolean {
  return plan.steps.every((step) => subgraphRuntime(step.device) === undefined);
}

/** A step's implementation on its device. */
export function stepImplementation(step: PreparedStep): StepImplementation | undefined {
  return deviceNamed(step.device)?.implementation(step.type);
}

/**
 * Builds the plan of a validated model; `placement` names the device of each step of the
 * run order (by default the first host device supporting it).
 */
export function prepareModel(
  model: Model,
  options: PrepareOptions,
  placement: readonly string[] = placeByPreference(model, HOST_DEVICES),
): PreparedModel {
  const steps = preparationSteps(model, options, placement);
  let step = steps.next();
  while (!step.done) step = steps.next();
  return step.value;
}

/** How long preparation works before it lets the event loop serve other requests. */
const PREPARATION_SLICE_MS = 10;

/**
 * Builds the plan like {@link prepareModel}, but gives the event loop a turn every
 * {@link PREPARATION_SLICE_MS} of work (a zero-delay timer: other requests are served
 * meanwhile) and fails with MISSED_DEADLINE_PERSISTENT at the first pause after `deadline`
 * (`Date.now()` milliseconds). A single operation's packing is never interrupted.
 */
export async function prepareModelAsync(
  model: Model,
  options: PrepareOptions,
  control: { deadline?: number; placement: readonly string[] },
): Promise<PreparedModel> {
  const steps = preparationSteps(model, options, control.placement);
  let sliceStart = performance.now();
  let step = steps.next();
  while (!step.done) {
    if (performance.now() - sliceStart >= PREPARATION_SLICE_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      sliceStart = performance.now();
    }
    checkPreparationDeadline(control.deadline, step.value);
    step = steps.next();
  }
  return step.value;
}

/**
 * Fails with MISSED_DEADLINE_PERSISTENT (NNAPI: preparation is not worth retrying as is)
 * when `deadline` (`Date.now()` milliseconds) has passed; `stage` says where preparation was.
 */
export function checkPreparationDeadline(deadline: number | undefined, stage: string): void {
  if (deadline !== undefined && Date.now() >= deadline) {
    throw new DriverError(
      "MISSED_DEADLINE_PERSISTENT",
      `Cannot prepare model: the deadline passed ${stage}`,
    );
  }
}

/**
 * Preparation as a sequence of steps: the generator pauses between them (after the arena
 * layout, after each operation and its weight packing, after each constant copied into the
 * shared buffers), yielding where it stands, and returns the plan. {@link prepareModel} runs
 * it straight through; {@link prepareModelAsync} checks a deadline at every pause and lets
 * the event loop run every few milliseconds.
 */
function* preparationSteps(
  model: Model,
  options: PrepareOptions,
  placement: readonly string[],
): Generator<string, PreparedModel> {
  const steps: PreparedStep[] = model.runOrder.map((k, s) => ({
    operation: k,
    type: model.operations[k].type,
    device: placement[s],
    inputs: model.operations[k].inputs,
    outputs: model.operations[k].outputs,
  }));
  const arena = layoutArena(model, steps);
  if (arena) planChains(model, steps, arena);
  yield "after laying out the arena";
  const packed = yield* packWeights(model, steps, arena !== undefined);
  const packedIn = replacedByPacking(model, steps, packed);
  const small: { type: OperandType; data: TensorData }[] = [];
  const large: { type: OperandType; data: TensorData }[] = [];
  const slotsOf = (operands: readonly Operand[], kept: (i: number) => boolean) =>
    operands.map((o, i) => {
      if (!o.value || !kept(i)) return undefined;
      const list = o.lifetime === "CONSTANT_REFERENCE" ? large : small;
      list.push({ type: o.type, data: o.value });
      return { small: list === small, slot: list.length - 1 };
    });
  const constantSlot = slotsOf(model.operands, (i) => !packedIn.has(i));
  const referencedSlots = model.referenced.map((graph) => slotsOf(graph.operands, () => true));
  const packedSlots = packed.map((list) =>
    list?.map((data) => {
      large.push({ type: typeOfArray(data), data });
      return large.length - 1;
    })
  );
  const smallBuffer = yield* packBuffer("small", small);
  const weights = yield* packBuffer("weights", large);
  steps.forEach((step, s) => {
    const slots = packedSlots[s];
    if (slots) step.packed = slots.map((slot) => weights.refs[slot]);
  });
  const preparedOperands = (
    operands: readonly Operand[],
    slots: ({ small: boolean; slot: number } | undefined)[],
    replaced: ReadonlyMap<number, number> = new Map(),
  ): PreparedOperand[] =>
    operands.map((o, i) => {
      const at = slots[i];
      return {
        type: o.type,
        shape: o.dimensions,
        scale: o.scale,
        zeroPoint: o.zeroPoint,
        lifetime: o.lifetime,
        ...(o.channelQuant ? { channelQuant: o.channelQuant } : {}),
        ...(at ? { constant: (at.small ? smallBuffer : weights).refs[at.slot] } : {}),
        ...(replaced.has(i) ? { packedIn: replaced.get(i) } : {}),
      };
    });
  return {
    operands: preparedOperands(model.operands, constantSlot, packedIn),
    steps,
    inputIndexes: model.inputIndexes,
    outputIndexes: model.outputIndexes,
    omittableInputs: model.inputIndexes.map((operand) =>
      model.operations.every((op) =>
        op.inputs.every((input, j) =>
          input !== operand || (operationDefinition(op.type)?.optionalInputs?.includes(j) ?? false)
        )
      )
    ),
    relaxComputationFloat32toFloat16: model.relaxComputationFloat32toFloat16,
    halVersion: model.halVersion,
    arena,
    options,
    smallConstants: smallBuffer.buffer,
    weights: weights.buffer,
    ...(model.referenced.length > 0
      ? {
        referenced: model.referenced.map((graph, k) => ({
          operands: preparedOperands(graph.operands, referencedSlots[k]),
          steps: referencedSteps(graph),
          inputIndexes: graph.inputIndexes,
          outputIndexes: graph.outputIndexes,
        })),
      }
      : {}),
  };
}

/** The steps of a referenced subgraph, in its run order, on {@link REFERENCED_DEVICE}. */
function referencedSteps(graph: Subgraph): PreparedStep[] {
  return graph.runOrder.map((k) => ({
    operation: k,
    type: graph.operations[k].type,
    device: REFERENCED_DEVICE,
    inputs: graph.operations[k].inputs,
    outputs: graph.operations[k].outputs,
  }));
}

/**
 * Large constants that only their packing operation reads and that its packed weights
 * replace: operand index -> step index. The plan stores them once, packed.
 */
function replacedByPacking(
  model: Model,
  steps: readonly PreparedStep[],
  packed: (TensorData[] | undefined)[],
): Map<number, number> {
  const readers = new Map<number, number>();
  for (const op of model.operations) {
    for (const i of new Set(op.inputs)) readers.set(i, (readers.get(i) ?? 0) + 1);
  }
  const replaced = new Map<number, number>();
  steps.forEach((step, s) => {
    const op = model.operations[step.operation];
    const implementation = stepImplementation(step);
    if (!packed[s] || !implementation?.unpack) return;
    for (const j of implementation.packReplaces ?? []) {
      const i = op.inputs[j];
      const operand = model.operands[i];
      if (operand.lifetime === "CONSTANT_REFERENCE" && readers.get(i) === 1) replaced.set(i, s);
    }
  });
  return replaced;
}

/** The operand type whose element kind a packed array uses. */
function typeOfArray(data: TensorData): OperandType {
  if (data instanceof Float32Array) return "TENSOR_FLOAT32";
  if (data instanceof Float16Array) return "TENSOR_FLOAT16";
  if (data instanceof Int32Array) return "TENSOR_INT32";
  if (data instanceof Uint32Array) return "UINT32";
  if (data instanceof Uint8Array) return "TENSOR_QUANT8_ASYMM";
  if (data instanceof Int8Array) return "TENSOR_QUANT8_SYMM";
  if (data instanceof Uint16Array) return "TENSOR_QUANT16_ASYMM";
  return "TENSOR_QUANT16_SYMM";
}
