/**
 * The device seam (NNAPI `IDevice`, ONNX Runtime's execution providers): the compiler,
 * partitioner, preparation and executors see a device only through this interface. A device
 * says what it can run (`supportedOperations`). A host device does its part of preparation
 * for the steps assigned to it (`StepImplementation.pack`: weights in its own layout, kept
 * in the plan and the data cache) and, in an executor, binds those steps to its kernels
 * (`StepImplementation.bind`); a device with memory of its own prepares and runs runs of
 * steps as subgraphs (`subgraphs`, `SubgraphRuntime`). What an operation *means* — validation, shapes, the reference kernel —
 * lives once, in `operations/`; a device only says how it runs it.
 */
import type { Model } from "../model/model.ts";
import type { Kernel, PrepareInput } from "../../operations/operation.ts";
import type { TensorData, TensorInfo } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType, OperationType } from "../../nnapi/types.ts";

/** NNAPI `PerformanceInfo`: relative to the reference CPU (lower is better). */
export interface PerformanceInfo {
  execTime: number;
  powerUsage: number;
}

/** What `GET /v1/devices` reports per device. */
export interface DeviceInfo {
  name: string;
  type: "CPU" | "GPU" | "ACCELERATOR" | "OTHER";
  version: string;
  featureLevel: number;
  halVersion: HalVersion;
  capabilities: {
    relaxedFloat32toFloat16PerformanceScalar: PerformanceInfo;
    relaxedFloat32toFloat16PerformanceTensor: PerformanceInfo;
    operandPerformance: Record<string, PerformanceInfo>;
  };
  supportedOperations: OperationType[];
  numberOfCacheFilesNeeded: { modelCache: number; dataCache: number };
}

/** Kinds of work that devices differ in speed at (`operation_classes.ts`). */
export type OperationClass = "gemm" | "window" | "elementwise" | "movement" | "control";

/** What calibration measured of a device, for costing plans on it. */
export interface DeviceCosts {
  /**
   * µs per unit of operation work (`operationWork`: multiply-adds, taps, elements) of its
   * matrix products, and of every class `perClass` lacks.
   */
  microsPerWork: number;
  /** µs per unit of work by operation class, where measured. */
  perClass?: Partial<Record<OperationClass, number>>;
  /** Moving a tensor to or from its memory space, when that is not the host's. */
  transfer?: { fixedMicros: number; microsPerByte: number };
}

/** One operation as a device's preparation and binding see it. */
export interface StepOperands {
  /** Inputs with their values when constant (null: an omitted optional input). */
  inputs: readonly PrepareInput[];
  outputs: readonly TensorInfo[];
}

/** How a device runs one operation type: what it takes, what it prepares, how it binds. */
export interface StepImplementation<T extends OperationType = OperationType> {
  readonly type: T;
  /**
   * Whether this form of the operation (types, constant weights, shapes) runs here. Where
   * an extent is known only at execution (0), it answers for what is known; `bind` then
   * checks the shapes an execution brings.
   */
  supports(step: StepOperands): boolean;
  /**
   * Weights re-laid out once at preparation for this device's kernel (from constants alone:
   * other extents may be known only at execution); undefined packs nothing. The result is
   * part of the plan and its data cache.
   */
  pack?(step: StepOperands): TensorData[] | undefined;
  /**
   * Input positions the packed weights make redundant: when such an input is a large
   * constant read by this step alone, the plan keeps only the packed form, and `unpack`
   * rebuilds the raw values if the reference kernel is ever needed.
   */
  readonly packReplaces?: readonly number[];
  /** The raw values of the `packReplaces` inputs, in that order, from the packed weights. */
  unpack?(inputs: readonly TensorInfo[], packed: readonly TensorData[]): TensorData[];
  /**
   * The kernel for these fully shaped operands in an executor (`packed` is what `pack`
   * returned), bound once per shape signature; undefined falls back to the reference
   * kernel for these shapes.
   */
  bind(step: StepOperands, packed: readonly TensorData[]): Kernel | undefined;
}

/** One step of a run of consecutive steps that a device may fuse into one pass. */
export interface ChainLink {
  type: OperationType;
  operands: StepOperands;
  /** The input that takes the previous link's output (absent for the first link). */
  chained?: number;
}

/**
 * How a host device runs consecutive steps as one pass (element-wise chains on `cpu-simd`):
 * decided at preparation, bound in each executor.
 */
export interface ChainFusion {
  /** How many leading links it runs as one pass (2 or more), or 0. */
  fusable(links: readonly ChainLink[]): number;
  /**
   * The pass's kernel: its inputs are every link's inputs in order, its outputs the last
   * link's; undefined runs the links one by one.
   */
  bind(links: readonly ChainLink[]): Kernel | undefined;
}

/** A device's implementations, each filed under its own operation type (compiler-checked). */
export type StepTable = { readonly [T in OperationType]?: StepImplementation<T> };

/** One step of a subgraph a subgraph device runs (operand indexes as in the model). */
export interface SubgraphStep {
  type: OperationType;
  inputs: readonly number[];
  outputs: readonly number[];
}

/** An operand as a subgraph device sees it: `value` for constants, null when omitted. */
export interface SubgraphOperand {
  type: OperandType;
  shape: readonly number[];
  /**
   * Its shape as the plan declares it, where 0 is an extent known only at execution (a model
   * imported as published): a device that takes such extents as they come (onnxruntime) can
   * prepare steps once for every signature whose preparation is otherwise the same. Absent:
   * `shape` is the plan's own.
   */
  declaredShape?: readonly number[];
  scale: number;
  zeroPoint: number;
  value?: TensorData | null;
}

/** A float32 tensor operand of `shape`, constant when `value` is given. */
export function float32Operand(shape: readonly number[], value?: Float32Array): SubgraphOperand {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, ...(value ? { value } : {}) };
}

/** A constant INT32 scalar operand. */
export function int32Operand(value: number): SubgraphOperand {
  return { type: "INT32", shape: [], scale: 0, zeroPoint: 0, value: Int32Array.of(value) };
}

/** A prepared run of steps, executed as one unit in the device's own memory. */
export interface RunnableSubgraph {
  /** Operands uploaded at each run and downloaded after it. */
  readonly inputs: readonly number[];
  readonly outputs: readonly number[];
  run(inputs: ReadonlyMap<number, TensorData>): Promise<Map<number, TensorData>>;
  destroy(): void;
  /**
   * What a later preparation of the same steps at the same shapes can start from instead of
   * from scratch (onnxruntime: its optimized model), kept in the compilation cache.
   */
  readonly artifact?: Uint8Array;
}

/**
 * The execution entry of a device with memory of its own (a GPU): it prepares and runs
 * whole subgraphs, uploading their inputs and downloading only what is needed outside.
 */
export interface SubgraphRuntime {
  /**
   * Whether a preparation serves other signatures of input shapes than its own (onnxruntime:
   * the extents a plan leaves open are symbolic in its sessions): a plan whose extents come at
   * execution then has its units prepared at preparation, for representative extents.
   */
  readonly servesOtherShapes?: boolean;
  prepare(
    steps: readonly SubgraphStep[],
    options: {
      operands: readonly SubgraphOperand[];
      needed: ReadonlySet<number>;
      /** An earlier preparation's `artifact` for these steps and shapes. */
      artifact?: Uint8Array;
      /** Whether to leave an `artifact` (a compilation being prepared for the cache). */
      keepArtifact?: boolean;
      /**
       * The model's relaxComputationFloat32toFloat16: float32 tensors may be computed with
       * float16 range and precision (a device may store weights as float16); a device
       * without such a form ignores it.
       */
      relaxed?: boolean;
    },
  ): Promise<RunnableSubgraph>;
}

/** A device as the driver sees it. */
export interface Device {
  readonly info: DeviceInfo;
  /** Where it keeps tensors: devices of one memory space hand tensors over without copies. */
  readonly memorySpace: string;
  /** Per operation of the model (model order), whether this device can run it. */
  supportedOperations(model: Model): boolean[];
  /** Its implementation of an operation type, for host devices that bind steps one by one. */
  implementation(type: OperationType): StepImplementation | undefined;
  /** Runs of consecutive steps it fuses into one pass, for host devices that do. */
  readonly chains?: ChainFusion;
  /**
   * For devices with memory of their own: their subgraph runtime on the driver's thread,
   * used to check at preparation that a subgraph really prepares (else the plan falls back).
   */
  readonly subgraphs?: SubgraphRuntime;
}
