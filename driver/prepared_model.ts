/**
 * Preparation: turns a validated model into an explicit plan — run order, one step per
 * operation, weights packed for their kernels, every constant in one shared buffer, and an
 * arena layout for intermediate tensors when all shapes are known. A `PreparedModel` is
 * plain structured-clonable data: executor workers take it as it is, and the compilation
 * cache stores it as a JSON model cache plus the constant buffer as data cache.
 */
import type { Model } from "./model.ts";
import type { PrepareInput } from "./operations/operation.ts";
import { operationDefinition } from "./operations/registry.ts";
import {
  byteSize,
  type ChannelQuant,
  elementBytes,
  elementCount,
  isFullySpecified,
  type TensorData,
  typedView,
} from "../nnapi/tensor.ts";
import type { HalVersion, Lifetime, OperandType, OperationType } from "../nnapi/types.ts";

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
  inputs: number[];
  outputs: number[];
  /** Weights its operation packed at preparation, in the constant buffer. */
  packed?: TensorRef[];
}

/** Byte offsets of every intermediate/output tensor in one per-execution buffer. */
export interface ArenaLayout {
  size: number;
  /** Per operand; -1 for operands that do not live in the arena. */
  offsets: number[];
}

/** Options of NNAPI `prepareModel` that shape the plan. */
export interface PrepareOptions {
  preference: "LOW_POWER" | "FAST_SINGLE_ANSWER" | "SUSTAINED_SPEED";
  priority: "LOW" | "MEDIUM" | "HIGH";
}

/** The explicit execution plan of a compilation. */
export interface PreparedModel {
  operands: PreparedOperand[];
  steps: PreparedStep[];
  inputIndexes: number[];
  outputIndexes: number[];
  /** Per model input: whether every operation reading it takes it as an optional input. */
  omittableInputs: boolean[];
  relaxComputationFloat32toFloat16: boolean;
  halVersion: HalVersion;
  /** Present when every intermediate shape is known at preparation. */
  arena?: ArenaLayout;
  /**
   * Estimated multiply-adds (or element operations) of one execution, for static plans: the
   * driver runs very small plans on its own thread instead of paying a worker round trip.
   */
  work?: number;
  options: PrepareOptions;
  /** CONSTANT_COPY values; shared with workers, never written after preparation. */
  smallConstants: SharedArrayBuffer;
  /** CONSTANT_REFERENCE values and packed weights; shared, never written after preparation. */
  weights: SharedArrayBuffer;
}

/** A plan without its weights: enough to check requests, shapes and buffer roles. */
export type Plan = Omit<PreparedModel, "weights">;

/** Alignment of tensors in the constant buffer and the arena (a cache line, SIMD-friendly). */
export const TENSOR_ALIGNMENT = 64;

function align(n: number): number {
  return Math.ceil(n / TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT;
}

/** A typed view of a constant of the plan. */
export function constantView(prepared: PreparedModel, ref: TensorRef): TensorData {
  const buffer = ref.buffer === "small" ? prepared.smallConstants : prepared.weights;
  return typedView(ref.type, buffer, ref.offset, ref.length);
}

/** Lays tensors out one after the other in a new shared buffer and copies them in. */
function packBuffer(
  name: TensorRef["buffer"],
  tensors: { type: OperandType; data: TensorData }[],
): { buffer: SharedArrayBuffer; refs: TensorRef[] } {
  let total = 0;
  const refs = tensors.map(({ type, data }) => {
    const ref = { buffer: name, type, offset: total, length: data.length };
    total = align(total + data.length * elementBytes(type));
    return ref;
  });
  const buffer = new SharedArrayBuffer(Math.max(total, TENSOR_ALIGNMENT));
  tensors.forEach(({ type, data }, i) => {
    typedView(type, buffer, refs[i].offset, refs[i].length).set(data as never);
  });
  return { buffer, refs };
}

/**
 * Greedy arena placement by decreasing size: an operand may reuse bytes of operands whose
 * lifetimes (first write to last read) do not overlap. Model outputs live to the end.
 */
function layoutArena(model: Model, steps: PreparedStep[]): ArenaLayout | undefined {
  if (!model.staticShapes) return undefined;
  const { operands } = model;
  const inArena = (i: number) =>
    operands[i].lifetime === "TEMPORARY_VARIABLE" || operands[i].lifetime === "MODEL_OUTPUT";
  for (let i = 0; i < operands.length; i++) {
    if (inArena(i) && !isFullySpecified(operands[i].dimensions)) return undefined;
  }
  for (const i of model.inputIndexes) {
    if (!isFullySpecified(operands[i].dimensions)) return undefined;
  }
  const first = new Array<number>(operands.length).fill(-1);
  const last = new Array<number>(operands.length).fill(-1);
  steps.forEach((step, s) => {
    for (const o of step.outputs) first[o] = s;
    for (const o of step.inputs) last[o] = s;
  });
  for (const o of model.outputIndexes) last[o] = steps.length;
  const candidates = operands.map((_, i) => i).filter(inArena)
    .map((i) => ({
      i,
      size: align(byteSize(operands[i].type, operands[i].dimensions)),
      from: first[i],
      to: Math.max(last[i], first[i]),
    }))
    .sort((a, b) => b.size - a.size || a.i - b.i);
  const offsets = new Array<number>(operands.length).fill(-1);
  const placed: { offset: number; size: number; from: number; to: number }[] = [];
  let size = 0;
  for (const c of candidates) {
    const conflicts = placed
      .filter((p) => p.from <= c.to && c.from <= p.to)
      .sort((a, b) => a.offset - b.offset);
    let offset = 0;
    for (const p of conflicts) {
      if (offset + c.size <= p.offset) break;
      offset = Math.max(offset, p.offset + p.size);
    }
    offsets[c.i] = offset;
    placed.push({ offset, size: c.size, from: c.from, to: c.to });
    size = Math.max(size, offset + c.size);
  }
  return { size, offsets };
}

/** Runs each operation's `pack` hook on its constant weights (static plans only). */
function packWeights(model: Model, staticPlan: boolean): (TensorData[] | undefined)[] {
  return model.runOrder.map((k) => {
    const op = model.operations[k];
    const definition = operationDefinition(op.type);
    if (!staticPlan || !definition?.pack) return undefined;
    const inputs: PrepareInput[] = op.inputs.map((i) => ({
      ...model.operands[i],
      shape: model.operands[i].dimensions,
      value: model.operands[i].lifetime === "NO_VALUE" ? null : model.operands[i].value,
    }));
    const outputs = op.outputs.map((i) => ({
      ...model.operands[i],
      shape: model.operands[i].dimensions,
    }));
    return definition.pack(inputs, outputs);
  });
}

/** Builds the plan of a validated model whose operations are all supported. */
export function prepareModel(model: Model, options: PrepareOptions): PreparedModel {
  const steps: PreparedStep[] = model.runOrder.map((k) => ({
    operation: k,
    type: model.operations[k].type,
    inputs: model.operations[k].inputs,
    outputs: model.operations[k].outputs,
  }));
  const arena = layoutArena(model, steps);
  const packed = packWeights(model, arena !== undefined);
  const packedIn = replacedByPacking(model, packed);
  const small: { type: OperandType; data: TensorData }[] = [];
  const large: { type: OperandType; data: TensorData }[] = [];
  const constantSlot = model.operands.map((o, i) => {
    if (!o.value || packedIn.has(i)) return undefined;
    const list = o.lifetime === "CONSTANT_REFERENCE" ? large : small;
    list.push({ type: o.type, data: o.value });
    return { small: list === small, slot: list.length - 1 };
  });
  const packedSlots = packed.map((list) =>
    list?.map((data) => {
      large.push({ type: typeOfArray(data), data });
      return large.length - 1;
    })
  );
  const smallBuffer = packBuffer("small", small);
  const weights = packBuffer("weights", large);
  steps.forEach((step, s) => {
    const slots = packedSlots[s];
    if (slots) step.packed = slots.map((slot) => weights.refs[slot]);
  });
  const refOf = (i: number) => {
    const at = constantSlot[i];
    if (!at) return {};
    return { constant: (at.small ? smallBuffer : weights).refs[at.slot] };
  };
  return {
    operands: model.operands.map((o, i) => ({
      type: o.type,
      shape: o.dimensions,
      scale: o.scale,
      zeroPoint: o.zeroPoint,
      lifetime: o.lifetime,
      ...(o.channelQuant ? { channelQuant: o.channelQuant } : {}),
      ...refOf(i),
      ...(packedIn.has(i) ? { packedIn: packedIn.get(i) } : {}),
    })),
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
    ...(arena ? { work: estimateWork(model) } : {}),
    options,
    smallConstants: smallBuffer.buffer,
    weights: weights.buffer,
  };
}

/**
 * Large constants that only their packing operation reads and that its packed weights
 * replace: operand index -> step index. The plan stores them once, packed.
 */
function replacedByPacking(
  model: Model,
  packed: (TensorData[] | undefined)[],
): Map<number, number> {
  const readers = new Map<number, number>();
  for (const op of model.operations) {
    for (const i of new Set(op.inputs)) readers.set(i, (readers.get(i) ?? 0) + 1);
  }
  const replaced = new Map<number, number>();
  model.runOrder.forEach((k, s) => {
    const op = model.operations[k];
    const definition = operationDefinition(op.type);
    if (!packed[s] || !definition?.unpack) return;
    for (const j of definition.packReplaces ?? []) {
      const i = op.inputs[j];
      const operand = model.operands[i];
      if (operand.lifetime === "CONSTANT_REFERENCE" && readers.get(i) === 1) replaced.set(i, s);
    }
  });
  return replaced;
}

/**
 * Multiply-adds of one execution: output elements times the taps each reads for the
 * weighted operations, element counts of inputs and outputs for the rest.
 */
function estimateWork(model: Model): number {
  let work = 0;
  const count = (i: number) => elementCount(model.operands[i].dimensions);
  for (const op of model.operations) {
    const out = op.outputs.reduce((n, i) => n + count(i), 0);
    const filter = model.operands[op.inputs[1]]?.dimensions ?? [];
    if (op.type === "CONV_2D" && filter.length === 4) {
      work += out * filter[1] * filter[2] * filter[3];
    } else if (op.type === "DEPTHWISE_CONV_2D" && filter.length === 4) {
      work += out * filter[1] * filter[2];
    } else if (op.type === "FULLY_CONNECTED" && filter.length === 2) {
      work += out * filter[1];
    } else {
      work += out + op.inputs.reduce((n, i) => n + count(i), 0);
    }
  }
  return work;
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
