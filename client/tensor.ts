/**
 * Tensor data as the SDK hands it out and takes it in: one typed array per operand type
 * (the driver's own mapping, `nnapi/tensor.ts`), and the wire's little-endian byte order
 * and base64 encoding of it (API.md).
 */
import { fromBase64, toBase64 } from "./base64.ts";
import { allocate, elementBytes, type TensorData, typedView, viewBytes } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";

export {
  elementBytes,
  elementCount,
  fromJsonNumber,
  isScalarType,
  type JsonNumber,
  toJsonNumber,
} from "../nnapi/tensor.ts";

/** The typed array holding data of some operand type. */
export type TensorArray = TensorData;

/** Data the SDK accepts for a tensor: numbers or any numeric typed array (converted). */
export type TensorValues = readonly number[] | TensorArray | Float64Array | Uint8ClampedArray;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * The values as the typed array of the operand type: returned as is when already of that
 * kind, else copied element by element (the typed array's own conversion rounds floats to
 * float16/float32 and wraps integers).
 */
export function toTensorArray(type: OperandType, values: TensorValues): TensorArray {
  // An empty array of the type tells its class (a subclass instance passes too).
  if (values instanceof allocate(type, 0).constructor) return values as TensorArray;
  const out = allocate(type, values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i];
  return out;
}

function swapBytes(bytes: Uint8Array, width: number): void {
  if (width === 1) return;
  for (let i = 0; i < bytes.length; i += width) bytes.subarray(i, i + width).reverse();
}

/**
 * The little-endian bytes of the data (the order of every wire format: base64, burst frames,
 * memories): a view on little-endian hosts, a swapped copy elsewhere.
 */
export function littleEndianBytes(data: TensorArray): Uint8Array {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (LITTLE_ENDIAN || data.BYTES_PER_ELEMENT === 1) return bytes;
  const copy = bytes.slice();
  swapBytes(copy, data.BYTES_PER_ELEMENT);
  return copy;
}

/**
 * Little-endian bytes as the operand type's typed array: a view over them when the host is
 * little-endian and they are aligned (burst RESULT frames are read without copying), else a
 * copy.
 */
export function fromLittleEndian(type: OperandType, bytes: Uint8Array): TensorArray {
  if (LITTLE_ENDIAN) return viewBytes(type, bytes);
  const copy = bytes.slice();
  swapBytes(copy, elementBytes(type));
  return viewBytes(type, copy);
}

/** The little-endian bytes of the data as base64 (the wire encoding of API.md). */
export function encodeBase64(data: TensorArray): string {
  return toBase64(littleEndianBytes(data));
}

/** Decodes base64 little-endian bytes into a fresh typed array of the operand type. */
export function decodeBase64(type: OperandType, text: string): TensorArray {
  const width = elementBytes(type);
  const bytes = fromBase64(text);
  if (bytes.byteLength % width !== 0) {
    throw new RangeError(
      `${bytes.byteLength} bytes are not a whole number of ${type} elements (${width} bytes)`,
    );
  }
  if (!LITTLE_ENDIAN) swapBytes(bytes, width);
  return typedView(type, bytes.buffer, 0, bytes.byteLength / width);
}
