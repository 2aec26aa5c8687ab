/**
 * Preparation: turns a validated model and a placement (a device per step) into its plan
 * (`plan.ts`): steps in run order, the arena layout and fused runs, weights packed by each
 * step's device, constants copied into the plan's two shared buffers. It pauses between
 * steps, so the event loop keeps serving and a deadline is checked.
 */
import { DriverError } from "../../nnapi/errors.ts";
import { align, arenaShapesKnown, layoutArena, TENSOR_ALIGNMENT } from "./arena_layout.ts";
import { fusedRuns } from "./chain_fusion.ts";
import { stepOperands } from "../devices/host_device.ts";
import { HOST_DEVICES } from "../devices/device_list.ts";
import type { Model, Operand, Subgraph } from "../model/model.ts";
import {
  type PreparedModel,
  type PreparedOperand,
  type PreparedStep,
  type PrepareOptions,
  stepImplementation,
  type TensorRef,
} from "./plan.ts";
import { placeByPreference } from "./partitioner/placement.ts";
import { operationDefinition } from "../../operations/table.ts";
import { elementBytes, type TensorData, typedView } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";

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
 * Lets each step's device pack the step's constant weights (whatever extents are known only
 * at execution: weights are constants), pausing after each operation.
 */
function* packWeights(
  model: Model,
  steps: readonly PreparedStep[],
): Generator<string, (TensorData[] | undefined)[]> {
  const packed: (TensorData[] | undefined)[] = [];
  for (const step of steps) {
    const op = model.operations[step.operation];
    const implementation = stepImplementation(step);
    if (!implementation?.pack) {
      packed.push(undefined);
      yield `after operation ${step.operation} (${op.type})`;
      continue;
    }
    packed.push(implementation.pack(stepOperands(model, op)));
    yield `after packing the weights of operation ${step.operation} (${op.type})`;
  }
  return packed;
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
  const graph = {
    operands: model.operands.map((o) => ({ ...o, shape: o.dimensions })),
    inputIndexes: model.inputIndexes,
    outputIndexes: model.outputIndexes,
    value: (i: number) =>
      model.operands[i].lifetime === "NO_VALUE" ? null : model.operands[i].value,
  };
  const arena = model.staticShapes && arenaShapesKnown(graph)
    ? layoutArena(graph, steps)
    : undefined;
  if (arena) {
    for (const [s, length] of fusedRuns(graph, steps, arena)) steps[s].chain = length;
  }
  yield "after laying out the arena";
  const packed = yield* packWeights(model, steps);
  const packedIn = replacedByPacking(model, steps, packed);
  // Referenced subgraphs (IF branches, WHILE bodies) run on the host: each step on the first
  // host device that supports it, its weights packed there, as the main graph's.
  const referencedPlans: { steps: PreparedStep[]; packed: (TensorData[] | undefined)[] }[] = [];
  for (const graph of model.referenced) {
    const asModel: Model = { ...model, ...graph };
    const graphSteps = referencedSteps(graph, placeByPreference(asModel, HOST_DEVICES));
    referencedPlans.push({ steps: graphSteps, packed: yield* packWeights(asModel, graphSteps) });
  }
  const referencedPackedIn = model.referenced.map((graph, k) =>
    replacedByPacking({ ...model, ...graph }, referencedPlans[k].steps, referencedPlans[k].packed)
  );
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
  const referencedSlots = model.referenced.map((graph, k) =>
    slotsOf(graph.operands, (i) => !referencedPackedIn[k].has(i))
  );
  const slotsOfPacked = (lists: (TensorData[] | undefined)[]) =>
    lists.map((list) =>
      list?.map((data) => {
        large.push({ type: typeOfArray(data), data });
        return large.length - 1;
      })
    );
  const packedSlots = slotsOfPacked(packed);
  const referencedPackedSlots = referencedPlans.map((plan) => slotsOfPacked(plan.packed));
  const smallBuffer = yield* packBuffer("small", small);
  const weights = yield* packBuffer("weights", large);
  const attachPacked = (all: PreparedStep[], slotLists: (number[] | undefined)[]) =>
    all.forEach((step, s) => {
      const slots = slotLists[s];
      if (slots) step.packed = slots.map((slot) => weights.refs[slot]);
    });
  attachPacked(steps, packedSlots);
  referencedPlans.forEach((plan, k) => attachPacked(plan.steps, referencedPackedSlots[k]));
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
          operands: preparedOperands(graph.operands, referencedSlots[k], referencedPackedIn[k]),
          steps: referencedPlans[k].steps,
          inputIndexes: graph.inputIndexes,
          outputIndexes: graph.outputIndexes,
        })),
      }
      : {}),
  };
}

/** The steps of a referenced subgraph, in its run order, on the devices `placement` names. */
function referencedSteps(graph: Subgraph, placement: readonly string[]): PreparedStep[] {
  return graph.runOrder.map((k, s) => ({
    operation: k,
    type: graph.operations[k].type,
    device: placement[s],
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
