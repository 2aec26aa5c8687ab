/**
 * The GPU resources of a prepared subgraph: one storage buffer per float32 operand a
 * command touches (constants filled once here), the weights kernels re-laid out, one uniform
 * buffer holding every dispatch's parameters, a bind group per dispatch, and the compiled
 * pipelines. Made once at preparation so that a run only writes its inputs, records the
 * commands and reads back. On Dawn every WebGPU object is a Node-API object, which Deno 2.9
 * deregisters at a cost that grows with all it tracks ({@link encodeRun}), so a subgraph makes
 * as few as it can: the parameters share a buffer, bind groups share their layout.
 */
import { DriverError } from "../../../nnapi/errors.ts";
import { byteSize } from "../../../nnapi/tensor.ts";
import type { GpuContext, GpuImplementation } from "./context.ts";
import type { GpuDispatch } from "./kernels/common.ts";
import type { GpuOperand, PlannedStep } from "./subgraph.ts";

/** A command bound to buffers, ready to record. */
export type PreparedCommand =
  | {
    kind: "dispatch";
    pipeline: GPUComputePipeline;
    bindGroup: GPUBindGroup;
    workgroups: readonly [number, number, number];
  }
  | { kind: "copy"; from: GPUBuffer; to: GPUBuffer; bytes: number };

/** Everything a prepared subgraph holds on the device. */
export interface PreparedResources {
  commands: PreparedCommand[];
  /** The buffer of each operand a command, input or output touches. */
  buffers: Map<number, GPUBuffer>;
  /** Every buffer made here, for `destroy`. */
  owned: GPUBuffer[];
}

const STORAGE = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

/**
 * Creates the buffers, bind groups and pipelines of the planned steps. A failure
 * (validation, out of memory, a shader the compiler rejects) frees what was made and
 * throws a DriverError.
 */
export async function prepareCommands(
  gpu: GpuContext,
  steps: readonly PlannedStep[],
  io: { operands: readonly GpuOperand[]; inputs: readonly number[]; outputs: readonly number[] },
): Promise<PreparedResources> {
  const { device } = gpu;
  const buffers = new Map<number, GPUBuffer>();
  const owned: GPUBuffer[] = [];
  const commands: PreparedCommand[] = [];

  function filled(data: ArrayBuffer | ArrayBufferView, usage: number): GPUBuffer {
    const bytes = data.byteLength;
    const buffer = device.createBuffer({
      size: Math.max(16, Math.ceil(bytes / 4) * 4),
      usage,
      mappedAtCreation: true,
    });
    const source = data instanceof ArrayBuffer
      ? new Uint8Array(data)
      : new Uint8Array(data.buffer, data.byteOffset, bytes);
    new Uint8Array(buffer.getMappedRange(), 0, bytes).set(source);
    buffer.unmap();
    owned.push(buffer);
    return buffer;
  }

  function operandBuffer(index: number): GPUBuffer {
    let buffer = buffers.get(index);
    if (!buffer) {
      const operand = io.operands[index];
      if (operand.value instanceof Float32Array) {
        buffer = filled(operand.value, STORAGE);
      } else {
        buffer = device.createBuffer({
          size: Math.max(16, byteSize(operand.type, operand.shape)),
          usage: STORAGE,
        });
        owned.push(buffer);
      }
      buffers.set(index, buffer);
    }
    return buffer;
  }

  // Pipelines first (each compiles under its own error scope); then everything else in
  // one synchronous stretch, so no other preparation's error scopes interleave with ours.
  const pipelines = new Map<string, GPUComputePipeline>();
  for (const step of steps) {
    for (const command of step.commands) {
      if (command.kind !== "dispatch") continue;
      const key = pipelineKey(command.code, command.reads.length, command.writes.length);
      if (pipelines.has(key)) continue;
      try {
        pipelines.set(
          key,
          await gpu.pipeline(command.code, command.reads.length, command.writes.length),
        );
      } catch (error) {
        throw new DriverError("GENERAL_FAILURE", `gpu subgraph preparation failed: ${error}`);
      }
    }
  }
  device.pushErrorScope("out-of-memory");
  device.pushErrorScope("validation");
  let failure: unknown;
  try {
    for (const index of [...io.inputs, ...io.outputs]) operandBuffer(index);
    const parameters = packedParameters(steps, device.limits.minUniformBufferOffsetAlignment);
    const uniforms = filled(parameters.bytes, GPUBufferUsage.UNIFORM);
    for (const step of steps) {
      for (const command of step.commands) {
        if (command.kind === "copy") {
          commands.push({
            kind: "copy",
            from: operandBuffer(step.inputs[command.input]),
            to: operandBuffer(step.outputs[command.output]),
            bytes: Math.ceil(command.bytes / 4) * 4,
          });
          continue;
        }
        const { reads, writes } = command;
        const pipeline = pipelines.get(pipelineKey(command.code, reads.length, writes.length))!;
        const storage: GPUBuffer[] = [
          ...reads.map((read) =>
            "input" in read ? operandBuffer(step.inputs[read.input]) : filled(read.data, STORAGE)
          ),
          ...writes.map((position) => operandBuffer(step.outputs[position])),
        ];
        const bindGroup = device.createBindGroup({
          layout: gpu.bindGroupLayout(reads.length, writes.length),
          entries: [
            { binding: 0, resource: { buffer: uniforms, ...parameters.place.get(command)! } },
            ...storage.map((buffer, k) => ({ binding: 1 + k, resource: { buffer } })),
          ],
        });
        commands.push({ kind: "dispatch", pipeline, bindGroup, workgroups: command.workgroups });
      }
    }
  } catch (error) {
    failure = error;
  }
  const scopes = [device.popErrorScope(), device.popErrorScope()];
  const [validation, memory] = await Promise.all(scopes);
  if (failure || validation || memory) {
    for (const buffer of owned) buffer.destroy();
    if (memory) {
      throw new DriverError("RESOURCE_EXHAUSTED_TRANSIENT", `gpu: ${memory.message}`);
    }
    const message = failure instanceof Error ? failure.message : validation?.message;
    throw new DriverError("GENERAL_FAILURE", `gpu subgraph preparation failed: ${message}`);
  }
  return { commands, buffers, owned };
}

/**
 * Every dispatch's parameters in one buffer's bytes, each at an offset the device allows a
 * uniform binding to start at, bound with the size a buffer of its own had.
 */
function packedParameters(steps: readonly PlannedStep[], alignment: number) {
  const place = new Map<GpuDispatch, { offset: number; size: number }>();
  let end = 0;
  for (const step of steps) {
    for (const command of step.commands) {
      if (command.kind !== "dispatch") continue;
      const offset = Math.ceil(end / alignment) * alignment;
      const size = Math.max(16, Math.ceil(command.params.byteLength / 4) * 4);
      place.set(command, { offset, size });
      end = offset + size;
    }
  }
  const bytes = new Uint8Array(Math.max(16, end));
  for (const [command, { offset }] of place) bytes.set(new Uint8Array(command.params), offset);
  return { bytes, place };
}

function pipelineKey(code: string, reads: number, writes: number): string {
  return `${reads}/${writes}\n${code}`;
}

/**
 * Records a run's commands. On Dawn, consecutive dispatches share one compute pass (WebGPU
 * orders them as separate passes); every pass encoder is a Node-API object, and Deno 2.9
 * deregisters each collected one by a scan and a shift of a list of all it tracks, so a
 * collection of N of them costs N² — a pass per dispatch left hundreds of thousands for a
 * major collection, which then held the event loop for minutes. On Deno's built-in WebGPU each
 * dispatch keeps a pass of its own: consecutive dispatches in one pass gave wrong results on
 * Mesa's llvmpipe there (a pooling dispatch followed by an element-wise one with the same
 * binding layout and a smaller uniform left the second one's output all zeros).
 */
export function encodeRun(
  encoder: GPUCommandEncoder,
  commands: readonly PreparedCommand[],
  implementation: GpuImplementation,
): void {
  let pass: GPUComputePassEncoder | undefined;
  for (const command of commands) {
    if (command.kind === "copy") {
      pass?.end();
      pass = undefined;
      encoder.copyBufferToBuffer(command.from, 0, command.to, 0, command.bytes);
      continue;
    }
    pass ??= encoder.beginComputePass();
    pass.setPipeline(command.pipeline);
    pass.setBindGroup(0, command.bindGroup);
    pass.dispatchWorkgroups(...command.workgroups);
    if (implementation === "deno") {
      pass.end();
      pass = undefined;
    }
  }
  pass?.end();
}
