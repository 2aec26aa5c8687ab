/**
 * NNAPI memory-domain rules (HAL 1.3 `allocate` / `validateMemoryDesc`): which operands a
 * buffer may serve, the dimensions it gets, and the checks every use of it must pass.
 */
import { invalid } from "./errors.ts";
import type { Plan } from "./prepared_model.ts";
import type { BufferRole, DeviceBuffer } from "../memory/buffers.ts";
import type { OperandType } from "./types.ts";

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
export function roleOperand(prepared: Plan, role: BufferRole): number {
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
  prepared: Plan,
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
