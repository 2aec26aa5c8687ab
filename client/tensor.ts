/**
 * Tensor data as the SDK hands it out and takes it in: one typed array per operand type,
 * and the wire's little-endian base64 encoding of it (API.md).
 */
import type { OperandType } from "./types.ts";

/** The typed array holding data of some operand type. */
export type TensorArray =
  | Float32Array
  | Float16Array
  | Int32Array
  | Uint32Array
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array;

/** Data the SDK accepts for a tensor: numbers or any numeric typed array (converted). */
export type TensorValues = readonly number[] | TensorArray | Float64Array | Uint8ClampedArray;

interface ElementKind {
  bytes: number;
  /** Whether a typed array already is this kind (no conversion needed). */
  is(data: unknown): boolean;
  create(buffer: ArrayBuffer, byteOffset: number, length: number): TensorArray;
}

function kind(
  bytes: number,
  ctor: { new (buffer: ArrayBuffer, byteOffset: number, length: number): TensorArray },
): ElementKind {
  return {
    bytes,
    is: (data) => data instanceof ctor,
    create: (buffer, byteOffset, length) => new ctor(buffer, byteOffset, length),
  };
}

const F32 = kind(4, Float32Array);
const F16 = kind(2, Float16Array);
const I32 = kind(4, Int32Array);
const U32 = kind(4, Uint32Array);
const U8 = kind(1, Uint8Array);
const I8 = kind(1, Int8Array);
const U16 = kind(2, Uint16Array);
const I16 = kind(2, Int16Array);

const ELEMENT_KINDS: Record<OperandType, ElementKind> = {
  FLOAT32: F32,
  INT32: I32,
  UINT32: U32,
  BOOL: U8,
  FLOAT16: F16,
  TENSOR_FLOAT32: F32,
  TENSOR_INT32: I32,
  TENSOR_QUANT8_ASYMM: U8,
  TENSOR_QUANT8_ASYMM_SIGNED: I8,
  TENSOR_QUANT8_SYMM: I8,
  TENSOR_QUANT8_SYMM_PER_CHANNEL: I8,
  TENSOR_QUANT16_ASYMM: U16,
  TENSOR_QUANT16_SYMM: I16,
  TENSOR_FLOAT16: F16,
  TENSOR_BOOL8: U8,
};

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Size in bytes of one element of the type. */
export function elementBytes(type: OperandType): number {
  return ELEMENT_KINDS[type].bytes;
}

/** Scalars (`FLOAT32`, `INT32`, ...) have no dimensions; everything else is a tensor. */
export function isScalarType(type: OperandType): boolean {
  return !type.startsWith("TENSOR_");
}

/**
 * The values as the typed array of the operand type: returned as is when already of that
 * kind, else copied element by element (the typed array's own conversion rounds floats to
 * float16/float32 and wraps integers).
 */
export function toTensorArray(type: OperandType, values: TensorValues): TensorArray {
  const element = ELEMENT_KINDS[type];
  if (element.is(values)) return values as TensorArray;
  const out = element.create(new ArrayBuffer(values.length * element.bytes), 0, values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i];
  return out;
}

function swapBytes(bytes: Uint8Array, width: number): void {
  if (width === 1) return;
  for (let i = 0; i < bytes.length; i += width) bytes.subarray(i, i + width).reverse();
}

/** The little-endian bytes of the data as base64 (the wire encoding of API.md). */
export function encodeBase64(data: TensorArray): string {
  let bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (!LITTLE_ENDIAN) {
    bytes = bytes.slice();
    swapBytes(bytes, data.BYTES_PER_ELEMENT);
  }
  return bytes.toBase64();
}

/** Decodes base64 little-endian bytes into a fresh typed array of the operand type. */
export function decodeBase64(type: OperandType, text: string): TensorArray {
  const element = ELEMENT_KINDS[type];
  const bytes = Uint8Array.fromBase64(text);
  if (bytes.byteLength % element.bytes !== 0) {
    throw new RangeError(
      `${bytes.byteLength} bytes are not a whole number of ${type} elements (${element.bytes} bytes)`,
    );
  }
  if (!LITTLE_ENDIAN) swapBytes(bytes, element.bytes);
  return element.create(bytes.buffer as ArrayBuffer, 0, bytes.byteLength / element.bytes);
}

/** Number of elements of a fully known shape (1 for scalars). */
export function elementCount(dimensions: readonly number[]): number {
  let n = 1;
  for (const d of dimensions) n *= d;
  return n;
}
