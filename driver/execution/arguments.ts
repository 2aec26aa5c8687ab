/**
 * Binds execution arguments that refer to client objects — memory pool regions and
 * driver-managed buffers — to data before an execution, and writes outputs back to them
 * after it. Every reference is checked on every use (owner, bounds, roles, initialization).
 */
import type { BufferRegistry, DeviceBuffer } from "../../memory/buffers.ts";
import { checkRegion, type HeldPool, type MemoryPools, type Pool } from "../../memory/pools.ts";
import { invalid } from "../../nnapi/errors.ts";
import type { RunOutput } from "../compilation/plan.ts";
import {
  type ExecutionRequest,
  inlineCapacities,
  type InputArgument,
  type OutputArgument,
} from "./request.ts";
import { checkBufferRole } from "./memory_domain.ts";
import type { PlanWithoutWeights } from "../compilation/plan.ts";
import { byteSize, isFullySpecified, toBytes, typedView } from "../../nnapi/tensor.ts";

/** Where the binder finds client objects. */
export interface BindingContext {
  owner: string;
  compilation: string;
  prepared: PlanWithoutWeights;
  pools: MemoryPools;
  buffers: BufferRegistry;
}

type BoundTarget =
  | { kind: "memory"; pool: Pool; offset: number; length: number }
  | { kind: "buffer"; buffer: DeviceBuffer };

/** An execution request whose references are resolved. */
export interface BoundExecution {
  /** The request with memory/buffer inputs replaced by their data. */
  request: ExecutionRequest;
  /** Per output, where it goes (undefined: returned inline). */
  targets: (BoundTarget | undefined)[];
  /** Per output, the bytes of room it has. */
  capacities: number[];
  /** Releases the buffers' reader/writer marks and the memories held for the execution. */
  release(): void;
}

/** What one binding takes and must give back: buffer marks and held memories. */
interface Holdings {
  reads: DeviceBuffer[];
  writes: DeviceBuffer[];
  pools: HeldPool[];
}

/** Holds a memory for the execution, so deleting it meanwhile keeps it counted. */
async function holdPool(context: BindingContext, id: string, held: Holdings): Promise<Pool> {
  const hold = await context.pools.hold(context.owner, id);
  held.pools.push(hold);
  return hold.pool;
}

async function bindInput(
  context: BindingContext,
  arg: InputArgument,
  k: number,
  held: Holdings,
): Promise<InputArgument> {
  const value = arg.value;
  if (value.kind === "memory") {
    const pool = await holdPool(context, value.memory, held);
    try {
      checkRegion(pool.size, value.offset, value.length, `input ${k}`);
    } catch (error) {
      throw invalid((error as Error).message, { path: ["inputs", k] });
    }
    const bytes = pool.bytes.subarray(value.offset, value.offset + value.length);
    return { value: { kind: "bytes", bytes }, dimensions: arg.dimensions };
  }
  if (value.kind === "buffer") {
    const buffer = context.buffers.get(context.owner, value.token);
    checkBufferRole(buffer, context.compilation, { io: "input", index: k });
    if (!buffer.contents) {
      throw invalid(`input ${k}: buffer ${buffer.token} is read before anything wrote it`, {
        path: ["inputs", k],
      });
    }
    held.reads.push(buffer);
    return { value: { kind: "tensor", ...buffer.contents } };
  }
  return arg;
}

async function bindOutput(
  context: BindingContext,
  arg: OutputArgument | undefined,
  k: number,
  held: Holdings,
): Promise<BoundTarget | undefined> {
  const target = arg?.target;
  if (!target) return undefined;
  if (target.kind === "memory" || target.kind === "pool") {
    const pool = target.kind === "pool"
      ? target.pool
      : await holdPool(context, target.memory, held);
    try {
      checkRegion(pool.size, target.offset, target.length, `output ${k}`);
    } catch (error) {
      throw invalid((error as Error).message, { path: ["outputs", k] });
    }
    return { kind: "memory", pool, offset: target.offset, length: target.length };
  }
  const buffer = context.buffers.get(context.owner, target.token);
  checkBufferRole(buffer, context.compilation, { io: "output", index: k });
  held.writes.push(buffer);
  return { kind: "buffer", buffer };
}

/** Whether a request refers to no client object: inputs inline, outputs answered inline. */
function refersToNothing(request: ExecutionRequest): boolean {
  for (const { value } of request.inputs) {
    if (value.kind === "memory" || value.kind === "buffer") return false;
  }
  return !request.outputs?.some((output) => output?.target !== undefined);
}

/** Nothing to give back. */
function releaseNothing(): void {}

/**
 * Resolves every memory and buffer reference of a request, holds its memories and marks its
 * buffers in use; on any failure everything taken so far is given back. A request that
 * refers to none (most) is bound as it is, at once (no promise at all).
 */
export function bindArguments(
  context: BindingContext,
  request: ExecutionRequest,
): BoundExecution | Promise<BoundExecution> {
  if (refersToNothing(request)) {
    return {
      request,
      targets: context.prepared.outputIndexes.map(() => undefined),
      capacities: inlineCapacities(context.prepared, request),
      release: releaseNothing,
    };
  }
  return bindReferences(context, request);
}

/** {@link bindArguments} of a request that refers to memories or buffers. */
async function bindReferences(
  context: BindingContext,
  request: ExecutionRequest,
): Promise<BoundExecution> {
  const held: Holdings = { reads: [], writes: [], pools: [] };
  const releasePools = () => held.pools.forEach((hold) => hold.release());
  const inputBindings = request.inputs.map((arg, k) => bindInput(context, arg, k, held));
  const outputBindings = context.prepared.outputIndexes.map((_, k) =>
    bindOutput(context, request.outputs?.[k], k, held)
  );
  // Settle every binding before deciding, so none holds a memory after a failure.
  const settled = await Promise.allSettled([...inputBindings, ...outputBindings]);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) {
    releasePools();
    throw failed.reason;
  }
  const inputs = await Promise.all(inputBindings);
  const targets = await Promise.all(outputBindings);
  const inline = inlineCapacities(context.prepared, request);
  const capacities = targets.map((target, k) => {
    if (target?.kind === "memory") return target.length;
    if (target?.kind === "buffer" && isFullySpecified(target.buffer.dimensions)) {
      return byteSize(target.buffer.type, target.buffer.dimensions);
    }
    return inline[k];
  });
  let releaseBuffers: () => void;
  try {
    releaseBuffers = context.buffers.acquire(held.reads, held.writes);
  } catch (error) {
    releasePools();
    throw error;
  }
  const release = () => {
    releaseBuffers();
    releasePools();
  };
  return { request: { ...request, inputs }, targets, capacities, release };
}

/** An output after delivery: its data when it stays inline, its shape only otherwise. */
export type DeliveredOutput = { shape: number[]; data?: RunOutput["data"] };

/**
 * Writes outputs to their memory regions (made durable) and buffers (new contents with
 * their shapes); returns what stays inline, at once when every output does.
 */
export function deliverOutputs(
  context: BindingContext,
  bound: BoundExecution,
  outputs: readonly RunOutput[],
): DeliveredOutput[] | Promise<DeliveredOutput[]> {
  if (bound.targets.every((target) => target === undefined)) return [...outputs];
  return Promise.all(outputs.map(async (output, k) => {
    const target = bound.targets[k];
    if (!target) return output;
    if (target.kind === "memory") {
      target.pool.bytes.set(toBytes(output.data), target.offset);
      await context.pools.persist(target.pool, target.offset, output.data.byteLength);
    } else {
      const { buffer } = target;
      const data = typedView(
        buffer.type,
        new SharedArrayBuffer(output.data.byteLength),
        0,
        output.data.length,
      );
      data.set(output.data as never);
      buffer.contents = { shape: output.shape, data };
    }
    return { shape: output.shape };
  }));
}
