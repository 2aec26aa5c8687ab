/**
 * The plan of a compilation (NNAPI's prepared model): run order, one step per operation, the
 * device of each step, weights packed for their kernels, every constant in one of two shared
 * buffers, and an arena layout for intermediate tensors when all shapes are known. A
 * `PreparedModel` is plain structured-clonable data: executor workers take it as it is, and
 * the compilation cache stores it as a JSON model cache plus the constant buffer as data
 * cache (`plan_codec.ts`). `prepare.ts` builds it.
 */
import type { ArenaLayout } from "./arena_layout.ts";
import type { StepImplementation } from "../devices/device.ts";
import { hostStepImplementation, subgraphRuntime } from "../devices/device_list.ts";
import type { PartitionSummary } from "./partitioner/model_partition.ts";
import { type ChannelQuant, type TensorData, typedView } from "../../nnapi/tensor.ts";
import type { HalVersion, Lifetime, OperandType, OperationType } from "../../nnapi/types.ts";

/** A model input as given to a run of the plan: its data (null when omitted), its full shape. */
export interface RunInput {
  data: TensorData | null;
  shape: number[];
  /**
   * A batched input as the executions' own blocks, stacked into `data` by the executor
   * that runs it (`execution/stacked_inputs.ts`); `data` is null until then.
   */
  stacked?: TensorData[];
}

/** A model output after a run of the plan. */
export interface RunOutput {
  shape: number[];
  data: TensorData;
}

/** Time spent in one step of the plan (a run of operations on one device). */
export interface StepTiming {
  /** The device that ran it (the fallback device when its own could not). */
  device: string;
  /** Model operation indexes, in run order. */
  operations: number[];
  onDeviceUs: number;
  /** Why the fallback device ran it, when the plan's device could not (these shapes). */
  fallback?: string;
}

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
  partition?: PartitionSummary;
  options: PrepareOptions;
  /**
   * What device units left at preparation for later ones (`RunnableSubgraph.artifact`), by
   * the unit's first step; part of the model cache (hashed, as the plan is).
   */
  unitArtifacts?: UnitArtifact[];
  /** CONSTANT_COPY values; shared with workers, never written after preparation. */
  smallConstants: SharedArrayBuffer;
  /** CONSTANT_REFERENCE values and packed weights; shared, never written after preparation. */
  weights: SharedArrayBuffer;
  /**
   * The model's referenced subgraphs (IF branches, WHILE conditions and bodies), indexed as
   * in the model; absent when it has none. Their constants live in the same two buffers;
   * their steps run on host devices (each on the first that supports it), bound per set of
   * input shapes at execution like the main graph's.
   */
  referenced?: PreparedGraph[];
}

/** A device unit's artifact, by the plan step the unit starts at. */
export interface UnitArtifact {
  step: number;
  bytes: Uint8Array;
}

/** A plan without its weights: enough to check requests, shapes and buffer roles. */
export type PlanWithoutWeights = Omit<PreparedModel, "weights">;

/** A typed view of a constant of the plan. */
export function constantView(prepared: PreparedModel, ref: TensorRef): TensorData {
  const buffer = ref.buffer === "small" ? prepared.smallConstants : prepared.weights;
  return typedView(ref.type, buffer, ref.offset, ref.length);
}

/** Whether every step runs on a host device (so the plan may run on any thread, at once). */
export function runsOnHost(plan: PlanWithoutWeights): boolean {
  return plan.steps.every((step) => subgraphRuntime(step.device) === undefined);
}

/** A step's implementation on its device. */
export function stepImplementation(step: PreparedStep): StepImplementation | undefined {
  return hostStepImplementation(step.device, step.type);
}
