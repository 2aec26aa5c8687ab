/**
 * Preparation: turns a validated model into an explicit plan (run order, one step per
 * operation, constants packed in one shared buffer, and an arena layout for intermediate
 * tensors when all shapes are known). A `PreparedModel` is plain structured-clonable data so
 * executor workers (and later the compilation cache) can take it as it is.
 */
import type { Model } from "./model.ts";
import { operationDefinition } from "./operations/registry.ts";
import {
  byteSize,
  type ChannelQuant,
  isFullySpecified,
  type TensorData,
  typedView,
} from "./tensor.ts";
import type { HalVersion, Lifetime, OperandType, OperationType } from "./types.ts";

/** An operand as the plan sees it; `shape` may hold 0 for extents known only at execution. */
export interface PreparedOperand {
  type: OperandType;
  shape: number[];
  scale: number;
  zeroPoint: number;
  lifetime: Lifetime;
  channelQuant?: ChannelQuant;
  /** Constant data, a view into the plan's shared constant buffer. */
  value?: TensorData;
}

/** One operation of the plan, in run order. */
export interface PreparedStep {
  /** Index of the operation in the model (for messages). */
  operation: number;
  type: OperationType;
  inputs: number[];
  outputs: number[];
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
  options: PrepareOptions;
}

/** Alignment of tensors in the constant buffer and the arena (a cache line, SIMD-friendly). */
export const TENSOR_ALIGNMENT = 64;

function align(n: number): number {
  return Math.ceil(n / TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT;
}

/** Copies every constant into one SharedArrayBuffer so executor workers share, not copy, it. */
function packConstants(model: Model): (TensorData | undefined)[] {
  let total = 0;
  const offsets = model.operands.map((o) => {
    if (!o.value) return -1;
    const at = total;
    total = align(total + o.value.byteLength);
    return at;
  });
  const shared = new SharedArrayBuffer(Math.max(total, TENSOR_ALIGNMENT));
  return model.operands.map((o, i) => {
    if (!o.value) return undefined;
    const view = typedView(o.type, shared, offsets[i], o.value.length);
    view.set(o.value as never);
    return view;
  });
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

/** Builds the plan of a validated model whose operations are all supported. */
export function prepareModel(model: Model, options: PrepareOptions): PreparedModel {
  const values = packConstants(model);
  const steps: PreparedStep[] = model.runOrder.map((k) => ({
    operation: k,
    type: model.operations[k].type,
    inputs: model.operations[k].inputs,
    outputs: model.operations[k].outputs,
  }));
  return {
    operands: model.operands.map((o, i) => ({
      type: o.type,
      shape: o.dimensions,
      scale: o.scale,
      zeroPoint: o.zeroPoint,
      lifetime: o.lifetime,
      channelQuant: o.channelQuant,
      value: values[i],
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
    arena: layoutArena(model, steps),
    options,
  };
}
