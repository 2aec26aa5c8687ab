/**
 * HAL 1.3's TENSOR_QUANT8_ASYMM_SIGNED form of an operation whose quant8 arithmetic depends
 * only on `q - zeroPoint` and on the order of the values (arithmetic, pooling, comparisons,
 * requantization, arg-max, top-k): int8 value q with zero point z is the uint8 value
 * q + 128 with zero point z + 128, so the signed form runs the operation's own quant8 path
 * on shifted operands and shifts the outputs back. The shift of a byte by 128 is flipping
 * its top bit, so the data moves without rounding. Operations that only move elements take
 * the signed type directly (`MOVED_TYPES` in shape_ops.ts).
 */
import type { Tensor, TensorInfo } from "../../nnapi/tensor.ts";
import { laterHal, type OperationType } from "../../nnapi/types.ts";
import {
  check,
  type DeclaredOperand,
  type Kernel,
  type OperationDefinition,
  OperationError,
  type OperationSignature,
  type PrepareInput,
} from "../operation.ts";

const SIGNED = "TENSOR_QUANT8_ASYMM_SIGNED";
const UNSIGNED = "TENSOR_QUANT8_ASYMM";

function isSigned(t: { type: string }): boolean {
  return t.type === SIGNED;
}

/** Whether `type` is one of the two asymmetric 8-bit quantized types. */
export function isQuant8Asymm(type: string): boolean {
  return type === UNSIGNED || type === SIGNED;
}

/** The signature's operands in order, named as the messages name them. */
function namedOperands(signature: OperationSignature): [string, DeclaredOperand][] {
  return [
    ...signature.inputs.map((o, i): [string, DeclaredOperand] => [`input ${i}`, o]),
    ...signature.outputs.map((o, i): [string, DeclaredOperand] => [`output ${i}`, o]),
  ];
}

/** No operation mixes the signed and unsigned quant8 types; the shift would hide it. */
function checkNotMixed(signature: OperationSignature): void {
  const unsigned = namedOperands(signature).find(([, o]) => o.type === UNSIGNED);
  check(
    unsigned === undefined,
    `${unsigned?.[0]} (operand ${unsigned?.[1].index}) is ${UNSIGNED} but the operation ` +
      `has ${SIGNED} operands; the two cannot be mixed`,
  );
}

/**
 * A fault found on the shifted operands, told in the signed operands' terms: the type is
 * named as declared, and zero points in the message are marked as shifted.
 */
function signedFault(error: OperationError): OperationError {
  let message = error.message.replace(/TENSOR_QUANT8_ASYMM(?!_)/g, SIGNED);
  if (/zero ?point/i.test(message)) {
    message += ` (zero points here are those of the ${UNSIGNED} equivalent, shifted by +128)`;
  }
  return new OperationError(message);
}

/** The operand's uint8 counterpart's info (zero point + 128); others unchanged. */
function shiftInfo<I extends TensorInfo | DeclaredOperand>(info: I): I {
  return isSigned(info) ? { ...info, type: UNSIGNED, zeroPoint: info.zeroPoint + 128 } : info;
}

/** The bytes of int8 data as uint8 values shifted by 128 (a copy). */
function flipped(data: Int8Array): Uint8Array {
  const out = new Uint8Array(data.length);
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.length);
  for (let i = 0; i < out.length; i++) out[i] = bytes[i] ^ 0x80;
  return out;
}

function shiftTensor(t: Tensor): Tensor {
  if (!isSigned(t)) return t;
  const data = t.data === null ? null : flipped(t.data as Int8Array);
  return { ...shiftInfo(t), data };
}

function shiftPrepareInput(p: PrepareInput): PrepareInput {
  if (!isSigned(p)) return p;
  const value = p.value ? flipped(p.value as Int8Array) : p.value;
  return { ...shiftInfo(p), value };
}

/** Runs `kernel` on the shifted operands, writing the signed outputs in place. */
function runShifted(kernel: Kernel, inputs: readonly Tensor[], outputs: readonly Tensor[]): void {
  const flips: Uint8Array[] = [];
  const shiftedOutputs = outputs.map((t) => {
    if (!isSigned(t) || t.data === null) return t;
    const d = t.data as Int8Array;
    // The kernel writes uint8 values into the output's own bytes; flipped back below.
    const bytes = new Uint8Array(d.buffer, d.byteOffset, d.length);
    flips.push(bytes);
    return { ...shiftInfo(t), data: bytes };
  });
  kernel(inputs.map(shiftTensor), shiftedOutputs);
  for (const bytes of flips) {
    for (let i = 0; i < bytes.length; i++) bytes[i] ^= 0x80;
  }
}

/**
 * Adds the TENSOR_QUANT8_ASYMM_SIGNED form (HAL V1_3) to a definition with a quant8 form
 * that is invariant under shifting every quantized value and zero point by the same amount.
 */
export function withSignedQuant8<T extends OperationType>(
  definition: OperationDefinition<T>,
): OperationDefinition<T> {
  return {
    ...definition,
    validate(signature) {
      const signed = signature.inputs.some(isSigned) || signature.outputs.some(isSigned);
      if (!signed) return definition.validate(signature);
      checkNotMixed(signature);
      try {
        const version = definition.validate({
          ...signature,
          inputs: signature.inputs.map(shiftInfo),
          outputs: signature.outputs.map(shiftInfo),
        });
        return laterHal(version, "V1_3");
      } catch (error) {
        throw error instanceof OperationError ? signedFault(error) : error;
      }
    },
    prepare(inputs, outputs) {
      try {
        return definition.prepare(inputs.map(shiftPrepareInput), outputs.map(shiftInfo));
      } catch (error) {
        const signed = inputs.some(isSigned) || outputs.some(isSigned);
        throw signed && error instanceof OperationError ? signedFault(error) : error;
      }
    },
    execute(inputs, outputs) {
      if (!inputs.some(isSigned) && !outputs.some(isSigned)) {
        return definition.execute(inputs, outputs);
      }
      runShifted(definition.execute, inputs, outputs);
    },
    bindReference: definition.bindReference &&
      ((inputs, outputs) => {
        if (!inputs.some(isSigned) && !outputs.some(isSigned)) {
          return definition.bindReference!(inputs, outputs);
        }
        const kernel = definition.bindReference!(
          inputs.map(shiftPrepareInput),
          outputs.map(shiftInfo),
        );
        return kernel && ((ins, outs) => runShifted(kernel, ins, outs));
      }),
    cost: definition.cost &&
      ((inputs, outputs) =>
        definition.cost!(inputs.map(shiftPrepareInput), outputs.map(shiftInfo))),
  };
}
