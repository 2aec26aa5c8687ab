/**
 * NNAPI memory-domain rules (HAL 1.3 `allocate` / `validateMemoryDesc`): which operands a
 * buffer may serve, the dimensions it gets, and the checks every use of it must pass.
 */
import type { BufferRegistry, BufferRole, DeviceBuffer } from "../../memory/buffers.ts";
import type { Pool } from "../../memory/pools.ts";
import { invalid } from "../../nnapi/errors.ts";
import type { PlanWithoutWeights } from "../compilation/plan.ts";
import {
  byteSize,
  elementCount,
  isFullySpecified,
  toBytes,
  typedView,
} from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";

/** A buffer allocation request after boundary validation. */
export interface BufferRequest {
  dimensions?: number[];
  roles: BufferRole[];
}

/** Combines two dimension lists where 0 (or an empty list for a tensor) means unknown. */
function mergeDimensions(a: readonly number[], b: readonly number[], what: string): number[] {
  if (a.length === 0) return [...b];
  if (b.length === 0) return [...a];
  if (a.length !== b.length) {
    throw invalid(`${what}: rank ${b.length} is incompatible with rank ${a.length}`);
  }
  return a.map((d, i) => {
    if (d !== 0 && b[i] !== 0 && d !== b[i]) {
      throw invalid(`${what}: dimension ${i} is ${b[i]}, incompatible with ${d}`);
    }
    return d !== 0 ? d : b[i];
  });
}

/** The model operand a role refers to. */
export function roleOperand(prepared: PlanWithoutWeights, role: BufferRole): number {
  const list = role.io === "input" ? prepared.inputIndexes : prepared.outputIndexes;
  if (role.index >= list.length) {
    throw invalid(
      `the compilation has ${list.length} ${role.io}s; there is no ${role.io} ${role.index}`,
    );
  }
  return list[role.index];
}

/** Validates roles and dimensions; returns what the buffer is. */
export function describeBuffer(
  prepared: PlanWithoutWeights,
  request: BufferRequest,
): { type: OperandType; dimensions: number[]; roles: BufferRole[] } {
  if (request.roles.length === 0) throw invalid("a buffer needs at least one role");
  const seen = new Set<string>();
  let dimensions = request.dimensions ?? [];
  let first: number | undefined;
  request.roles.forEach((role, k) => {
    const key = `${role.io}:${role.index}`;
    if (seen.has(key)) throw invalid(`roles[${k}]: ${role.io} ${role.index} is listed twice`);
    seen.add(key);
    const operandIndex = roleOperand(prepared, role);
    const operand = prepared.operands[operandIndex];
    if (first === undefined) first = operandIndex;
    const reference = prepared.operands[first];
    if (
      operand.type !== reference.type || operand.scale !== reference.scale ||
      operand.zeroPoint !== reference.zeroPoint
    ) {
      throw invalid(
        `roles[${k}]: ${role.io} ${role.index} (operand ${operandIndex}, ${operand.type}) differs in type or quantization from operand ${first} (${reference.type})`,
      );
    }
    dimensions = mergeDimensions(
      dimensions,
      operand.shape,
      `roles[${k}] (${role.io} ${role.index}, operand ${operandIndex})`,
    );
  });
  return { type: prepared.operands[first!].type, dimensions, roles: request.roles };
}

/** Checks that a buffer may be used as the given input or output of this compilation. */
export function checkBufferRole(
  buffer: DeviceBuffer,
  compilation: string,
  role: BufferRole,
): void {
  const allowed = buffer.compilation === compilation &&
    buffer.roles.some((r) => r.io === role.io && r.index === role.index);
  if (!allowed) {
    throw invalid(
      `buffer ${buffer.token} was not allocated for ${role.io} ${role.index} of this compilation`,
      { path: [`${role.io}s`, role.index] },
    );
  }
}

/**
 * `IBuffer::copyFrom`: the buffer must be fully shaped and the memory exactly its size; the
 * buffer then holds a copy (a write: it fails while others read or write the buffer).
 */
export function copyIntoBuffer(buffers: BufferRegistry, buffer: DeviceBuffer, pool: Pool): void {
  if (!isFullySpecified(buffer.dimensions) && buffer.dimensions.length > 0) {
    throw invalid(
      `buffer ${buffer.token} has unknown dimensions [${buffer.dimensions}]; copy-from needs them all`,
    );
  }
  const size = byteSize(buffer.type, buffer.dimensions);
  if (pool.size !== size) {
    throw invalid(`memory ${pool.id} has ${pool.size} bytes; buffer ${buffer.token} needs ${size}`);
  }
  const release = buffers.acquire([], [buffer]);
  try {
    const shared = new SharedArrayBuffer(size);
    const data = typedView(buffer.type, shared, 0, elementCount(buffer.dimensions));
    toBytes(data).set(pool.bytes);
    buffer.contents = { shape: [...buffer.dimensions], data };
  } finally {
    release();
  }
}

/**
 * `IBuffer::copyTo`: the buffer must have been written and the memory be exactly the size of
 * its contents. Copies while holding a read mark on the buffer and returns its release,
 * for the caller to call once the memory is durable.
 */
export function copyOutOfBuffer(
  buffers: BufferRegistry,
  buffer: DeviceBuffer,
  pool: Pool,
): () => void {
  if (!buffer.contents) throw invalid(`buffer ${buffer.token} is read before anything wrote it`);
  const size = buffer.contents.data.byteLength;
  if (pool.size !== size) {
    throw invalid(`memory ${pool.id} has ${pool.size} bytes; buffer ${buffer.token} holds ${size}`);
  }
  const release = buffers.acquire([buffer], []);
  pool.bytes.set(toBytes(buffer.contents.data));
  return release;
}
