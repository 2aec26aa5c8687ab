/**
 * The gpu device's execution unit: a run of consecutive operations prepared once (shapes
 * static, parameters decoded, weights uploaded, pipelines compiled, bind groups made) and
 * run many times. Only the subgraph's inputs are uploaded and only the operands needed
 * outside it are downloaded; everything in between stays in GPU buffers, and intermediates
 * that fused steps hand on (`fusion.ts`) are not stored at all.
 */
import { DriverError } from "../../../nnapi/errors.ts";
import {
  byteSize,
  elementCount,
  isScalarType,
  type TensorData,
  type TensorInfo,
} from "../../../nnapi/tensor.ts";
import type { OperandType, OperationType } from "../../../nnapi/types.ts";
import {
  OperationError,
  type PrepareInput,
  ValueNotYetKnown,
} from "../../../operations/operation.ts";
import { operationDefinition } from "../../../operations/table.ts";
import type { GpuAdapterDescription, GpuContext } from "./context.ts";
import type { GpuCommand, KernelOptions } from "./kernels/common.ts";
import { elementwiseChainDispatch } from "./kernels/elementwise.ts";
import { gpuKernel } from "./kernels/mod.ts";
import { chainLinks, type GpuUnit, planUnits, prepareInputs } from "./fusion.ts";
import { encodeRun, prepareCommands, type PreparedResources } from "./resources.ts";

/**
 * One operation of a subgraph: a run of consecutive operations the gpu device executes as
 * one unit.
 */
export interface GpuStep {
  type: OperationType;
  /** Operand indexes, as in the model. */
  inputs: readonly number[];
  outputs: readonly number[];
}

/**
 * An operand of the model as the gpu device sees it. `value`: the data of a constant
 * (weights, scalar parameters), `null` for an omitted optional input, absent when it is
 * known only at execution (model inputs, operands other steps compute).
 */
export interface GpuOperand {
  type: OperandType;
  shape: readonly number[];
  scale: number;
  zeroPoint: number;
  value?: TensorData | null;
}

/**
 * The largest buffer binding every WebGPU device must support (128 MiB): tensors beyond it
 * are refused rather than made to depend on the adapter.
 */
const MAX_BINDING_BYTES = 134217728;

/**
 * Why the gpu device cannot run a step, or undefined when it can: a WGSL kernel for the
 * type, float32 tensors of static non-empty shapes, constant parameters (and constant
 * weights where the kernel re-lays them out), NHWC layout, and the operation's own shape
 * inference agreeing with the declared outputs.
 */
export function gpuSupportReason(
  step: GpuStep,
  operands: readonly GpuOperand[],
  shapes: "declared" | "unknown extents allowed" = "declared",
): string | undefined {
  // Planning a model whose extents are given at execution: what depends on the shapes is
  // checked when they arrive (each executor prepares the subgraph per shape signature).
  // Its kernels need each tensor's rank, so only extents (not ranks) may wait; a tensor
  // whose shape is known is checked as it is.
  const waits = (operand: GpuOperand | undefined) =>
    shapes === "unknown extents allowed" && operand?.type === "TENSOR_FLOAT32" &&
    operand.shape.some((d) => d === 0);
  const open = [...step.inputs, ...step.outputs].some((i) => waits(operands[i]));
  const tensorFault = (operand: GpuOperand, what: string) =>
    waits(operand) ? undefined : staticTensorFault(operand, what);
  const kernel = gpuKernel(step.type);
  const definition = operationDefinition(step.type);
  if (!kernel || !definition) return `the gpu device has no kernel for ${step.type}`;
  const inputs: PrepareInput[] = [];
  for (const [k, index] of step.inputs.entries()) {
    const operand = operands[index];
    if (!operand) return `input ${k} (operand ${index}) does not exist`;
    const constant = operand.value !== undefined && operand.value !== null;
    if (operand.type === "TENSOR_FLOAT32") {
      const fault = tensorFault(operand, `input ${k} (operand ${index})`);
      if (fault) return fault;
      if (operand.value === null) return `input ${k} (operand ${index}) is omitted`;
      if (constant && !(operand.value instanceof Float32Array)) {
        return `input ${k} (operand ${index}) holds no float32 data`;
      }
      if (!constant && kernel.constantInputs.includes(k)) {
        return `input ${k} (operand ${index}) must be a constant on the gpu device`;
      }
    } else if (isScalarType(operand.type) || operand.type === "TENSOR_INT32") {
      if (!constant) return `parameter ${k} (operand ${index}) is known only at execution`;
      if (operand.type === "BOOL" && Number(operand.value![0]) !== 0) {
        return "the gpu device takes NHWC tensors only";
      }
    } else {
      return `input ${k} (operand ${index}) is ${operand.type}; the gpu device runs float32`;
    }
    inputs.push({ ...operand, value: operand.value });
  }
  const outputs: TensorInfo[] = [];
  for (const [k, index] of step.outputs.entries()) {
    const operand = operands[index];
    if (!operand) return `output ${k} (operand ${index}) does not exist`;
    if (operand.type !== "TENSOR_FLOAT32") return `output ${k} is ${operand.type}`;
    const fault = tensorFault(operand, `output ${k} (operand ${index})`);
    if (fault) return fault;
    outputs.push(operand);
  }
  if (open) return undefined;
  let inferred: number[][];
  try {
    inferred = definition.prepare(inputs, outputs);
  } catch (error) {
    if (error instanceof OperationError) return error.message;
    if (error instanceof ValueNotYetKnown) return "a parameter is known only at execution";
    throw error;
  }
  for (const [k, shape] of inferred.entries()) {
    const declared = outputs[k].shape;
    if (shape.length !== declared.length || shape.some((d, i) => d !== declared[i])) {
      return `output ${k} computes to [${shape}] but is declared [${declared}]`;
    }
  }
  return undefined;
}

/**
 * Whether the gpu device can run a step of a model, whose extents may be known only at
 * execution ({@link gpuSupportReason} says why not).
 */
export function supportsOnGpu(step: GpuStep, operands: readonly GpuOperand[]): boolean {
  return gpuSupportReason(step, operands, "unknown extents allowed") === undefined;
}

function staticTensorFault(operand: GpuOperand, what: string): string | undefined {
  if (operand.shape.length === 0 || operand.shape.some((d) => !(d > 0))) {
    return `${what} has shape [${operand.shape}]; the gpu device needs static non-empty shapes`;
  }
  if (byteSize(operand.type, operand.shape) > MAX_BINDING_BYTES) {
    return `${what} is over the ${MAX_BINDING_BYTES}-byte buffer binding limit`;
  }
  return undefined;
}

/** What {@link prepareGpuSubgraph} needs besides the steps. */
export interface GpuSubgraphOptions {
  /** Every operand of the model, by index (the steps refer to them). */
  operands: readonly GpuOperand[];
  /**
   * Operands the steps produce that are read outside the subgraph (by other devices'
   * steps, or as model outputs): downloaded after each run. Produced operands not listed
   * stay on the GPU; listed operands the steps do not produce are ignored.
   */
  needed: ReadonlySet<number>;
  /**
   * The model's relaxComputationFloat32toFloat16: float16 may stand in for float32, so
   * matrix weights are stored as float16 where the adapter has shader-f16.
   */
  relaxed?: boolean;
}

/**
 * Whether matrix kernels store their weights as float16: only for a relaxed model, and
 * only on an adapter with shader-f16 (elsewhere the flag changes nothing).
 */
export function usesF16Weights(
  relaxed: boolean | undefined,
  adapter: Pick<GpuAdapterDescription, "shaderF16">,
): boolean {
  return relaxed === true && adapter.shaderF16;
}

/** A prepared subgraph; concurrent runs are ordered by the GPU queue, each with its results. */
export interface GpuSubgraph {
  /**
   * Operands uploaded at each run: the non-constant tensors the steps read but do not
   * produce (model inputs, other devices' results), in first-read order.
   */
  readonly inputs: readonly number[];
  /** Operands downloaded at each run (produced here and `needed`), in production order. */
  readonly outputs: readonly number[];
  /** The static shape of an input or output operand. */
  shape(operand: number): readonly number[];
  /**
   * Uploads `inputs` (one Float32Array of the operand's element count per subgraph
   * input), runs every step and resolves to the outputs, in fresh arrays.
   */
  run(inputs: ReadonlyMap<number, TensorData>): Promise<Map<number, TensorData>>;
  /** Frees the subgraph's buffers; runs after it fail. */
  destroy(): void;
}

/**
 * The commands of one step (or of steps fused into one), with the operands its input and
 * output positions bind.
 */
export interface PlannedStep {
  commands: readonly GpuCommand[];
  inputs: readonly number[];
  outputs: readonly number[];
}

/**
 * Prepares `steps` (in execution order) to run on `gpu`. Throws a `GENERAL_FAILURE`
 * DriverError naming the step when one is unsupported ({@link gpuSupportReason}) or reads
 * an operand a later step produces.
 */
export async function prepareGpuSubgraph(
  gpu: GpuContext,
  steps: readonly GpuStep[],
  options: GpuSubgraphOptions,
): Promise<GpuSubgraph> {
  const { operands, needed } = options;
  const producedBy = new Map<number, number>();
  const inputs: number[] = [];
  const fail = (s: number, message: string) =>
    new DriverError("GENERAL_FAILURE", `gpu step ${s} (${steps[s].type}): ${message}`);
  steps.forEach((step, s) => {
    const reason = gpuSupportReason(step, operands);
    if (reason) throw fail(s, reason);
    for (const index of step.inputs) {
      const operand = operands[index];
      if (operand.type !== "TENSOR_FLOAT32" || operand.value !== undefined) continue;
      if (producedBy.has(index) || inputs.includes(index)) continue;
      if (steps.some((later, l) => l > s && later.outputs.includes(index))) {
        throw fail(s, `operand ${index} is produced by a later step`);
      }
      inputs.push(index);
    }
    for (const index of step.outputs) {
      if (producedBy.has(index) || inputs.includes(index)) {
        throw fail(s, `operand ${index} is written twice`);
      }
      producedBy.set(index, s);
    }
  });
  const kernelOptions: KernelOptions = {
    f16Weights: usesF16Weights(options.relaxed, gpu.adapter),
  };
  const planned = planUnits(steps, operands, needed).map((unit) => {
    const first = unit.kind === "chain" ? unit.steps[0] : unit.step;
    try {
      return planUnit(unit, steps, operands, kernelOptions);
    } catch (error) {
      if (error instanceof OperationError) throw fail(first, error.message);
      throw error;
    }
  });
  const outputs = [...producedBy.keys()].filter((index) => needed.has(index));
  const prepared = await prepareCommands(gpu, planned, { operands, inputs, outputs });
  return createSubgraph(gpu, prepared, { operands, inputs, outputs });
}

/** The commands of one unit, with the operands its input and output positions bind. */
function planUnit(
  unit: GpuUnit,
  steps: readonly GpuStep[],
  operands: readonly GpuOperand[],
  options: KernelOptions,
): PlannedStep {
  if (unit.kind === "chain") {
    const chain = unit.steps.map((s) => steps[s]);
    const { links, reads } = chainLinks(chain, operands);
    const output = chain[chain.length - 1].outputs[0];
    const shapes = reads.map((index) => operands[index].shape);
    return {
      commands: [elementwiseChainDispatch(links, shapes, operands[output].shape)],
      inputs: reads,
      outputs: [output],
    };
  }
  const step = steps[unit.step];
  const outputs = unit.kind === "folded" ? steps[unit.relu].outputs : step.outputs;
  const commands = gpuKernel(step.type)!.build(
    prepareInputs(step, operands),
    outputs.map((i) => operands[i]),
    unit.kind === "folded" ? { ...options, foldedRelu: unit.bounds } : options,
  );
  return { commands, inputs: step.inputs, outputs };
}

/**
 * The run-time half. Each run writes its inputs, records the commands and submits them
 * without awaiting anything in between, so the queue orders concurrent runs (a later run's
 * uploads land after an earlier run's dispatches read): runs need no lock, only a staging
 * buffer each, from a pool. That matters because Deno's `mapAsync` polls the device every
 * 10 ms, so every run waits at least that long; overlapping runs share the wait.
 */
function createSubgraph(
  gpu: GpuContext,
  prepared: PreparedResources,
  io: { operands: readonly GpuOperand[]; inputs: number[]; outputs: number[] },
): GpuSubgraph {
  const { device } = gpu;
  const { operands, inputs, outputs } = io;
  const outputBytes = outputs.map((i) => byteSize(operands[i].type, operands[i].shape));
  const stagingBytes = Math.max(4, outputBytes.reduce((a, b) => a + b, 0));
  const idle: GPUBuffer[] = [];
  let destroyed = false;

  function submit(data: ReadonlyMap<number, TensorData>): GPUBuffer {
    for (const index of inputs) {
      const value = data.get(index);
      const length = elementCount(operands[index].shape);
      if (!(value instanceof Float32Array) || value.length !== length) {
        throw new DriverError(
          "INVALID_ARGUMENT",
          `gpu subgraph input operand ${index} needs a Float32Array of ${length} elements`,
        );
      }
    }
    for (const index of inputs) {
      const value = data.get(index) as Float32Array;
      // WebGPU copies from non-shared memory only (memory pools are SharedArrayBuffers).
      const buffer = value.buffer;
      const source = buffer instanceof ArrayBuffer
        ? new Float32Array(buffer, value.byteOffset, value.length)
        : value.slice();
      device.queue.writeBuffer(prepared.buffers.get(index)!, 0, source);
    }
    const target = idle.pop() ?? device.createBuffer({
      size: stagingBytes,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    });
    const encoder = device.createCommandEncoder();
    encodeRun(encoder, prepared.commands, gpu.implementation);
    let offset = 0;
    outputs.forEach((index, k) => {
      encoder.copyBufferToBuffer(prepared.buffers.get(index)!, 0, target, offset, outputBytes[k]);
      offset += outputBytes[k];
    });
    device.queue.submit([encoder.finish()]);
    return target;
  }

  async function collect(target: GPUBuffer): Promise<Map<number, TensorData>> {
    try {
      await target.mapAsync(GPUMapMode.READ);
    } catch (error) {
      throw new DriverError("DEVICE_UNAVAILABLE", `gpu subgraph run failed: ${error}`);
    }
    const mapped = new Float32Array(target.getMappedRange());
    const result = new Map<number, TensorData>();
    let offset = 0;
    outputs.forEach((index, k) => {
      result.set(index, mapped.slice(offset / 4, (offset + outputBytes[k]) / 4));
      offset += outputBytes[k];
    });
    target.unmap();
    if (destroyed) {
      target.destroy();
    } else {
      idle.push(target);
    }
    return result;
  }

  return {
    inputs,
    outputs,
    shape(operand) {
      if (!inputs.includes(operand) && !outputs.includes(operand)) {
        throw new Error(`operand ${operand} is neither an input nor an output of the subgraph`);
      }
      return operands[operand].shape;
    },
    run(data) {
      if (destroyed) {
        return Promise.reject(
          new DriverError("GENERAL_FAILURE", "the gpu subgraph was destroyed"),
        );
      }
      try {
        return collect(submit(data));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const buffer of idle.splice(0)) buffer.destroy();
      // Buffers of runs in flight go when their run has read them back.
      for (const buffer of prepared.owned) buffer.destroy();
    },
  };
}
