/**
 * Tensor data as the SDK hands it out and takes it in: one typed array per operand type,
 * and the wire's little-endian byte order and base64 encoding of it (docs/api.md). The element
 * table and the helpers the service needs too live here (the SDK imports nothing outside
 * `client/`) and the service's `nnapi/tensor.ts` builds on them.
 */
import { fromBase64, toBase64 } from "./base64.ts";
import type { OperandType } from "./vocabulary.ts";

/** The typed array holding data of some operand type (Float32Array for TENSOR_FLOAT32, ...). */
export type TensorArray =
  | Float32Array
  | Float16Array
  | Int32Array
  | Uint32Array
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array;

/** Per-channel quantization of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand. */
export interface ChannelQuant {
  /** The dimension the channels run along. */
  channelDim: number;
  /** One scale per channel (the operand's own scale is 0). */
  scales: number[];
}

interface ElementKind {
  bytes: number;
  create(buffer: ArrayBufferLike, byteOffset: number, length: number): TensorArray;
  /** A fresh zero-filled array (one allocation: half the cost of a buffer and a view). */
  zeros(length: number): TensorArray;
}

const F32: ElementKind = {
  bytes: 4,
  create: (b, o, n) => new Float32Array(b, o, n),
  zeros: (n) => new Float32Array(n),
};
// Created only when a float16 operand is met: Node 20 has no Float16Array.
const F16: ElementKind = {
  bytes: 2,
  create: (b, o, n) => new Float16Array(b, o, n),
  zeros: (n) => new Float16Array(n),
};
const I32: ElementKind = {
  bytes: 4,
  create: (b, o, n) => new Int32Array(b, o, n),
  zeros: (n) => new Int32Array(n),
};
const U32: ElementKind = {
  bytes: 4,
  create: (b, o, n) => new Uint32Array(b, o, n),
  zeros: (n) => new Uint32Array(n),
};
const U8: ElementKind = {
  bytes: 1,
  create: (b, o, n) => new Uint8Array(b, o, n),
  zeros: (n) => new Uint8Array(n),
};
const I8: ElementKind = {
  bytes: 1,
  create: (b, o, n) => new Int8Array(b, o, n),
  zeros: (n) => new Int8Array(n),
};
const U16: ElementKind = {
  bytes: 2,
  create: (b, o, n) => new Uint16Array(b, o, n),
  zeros: (n) => new Uint16Array(n),
};
const I16: ElementKind = {
  bytes: 2,
  create: (b, o, n) => new Int16Array(b, o, n),
  zeros: (n) => new Int16Array(n),
};

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
  // A subgraph reference holds the index of the referenced subgraph, as a constant.
  SUBGRAPH: U32,
};

/** Size in bytes of one element of the type. */
export function elementBytes(type: OperandType): number {
  return ELEMENT_KINDS[type].bytes;
}

/** Scalars have no dimensions; everything else is a tensor. */
export function isScalarType(type: OperandType): boolean {
  return !type.startsWith("TENSOR_");
}

/** Number of elements of a fully known shape (1 for scalars). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** A typed view of the type over (a part of) a buffer; `byteOffset` must be aligned. */
export function typedView(
  type: OperandType,
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
): TensorArray {
  return ELEMENT_KINDS[type].create(buffer, byteOffset, length);
}

/** A fresh zero-filled array of the type. */
export function allocate(type: OperandType, length: number): TensorArray {
  return ELEMENT_KINDS[type].zeros(length);
}

/**
 * A typed array over the same bytes when they are aligned for the type (no copy), else an
 * aligned copy. The byte length must be a multiple of the element size.
 */
export function viewBytes(type: OperandType, bytes: Uint8Array): TensorArray {
  const kind = ELEMENT_KINDS[type];
  if (bytes.byteOffset % kind.bytes === 0) {
    return kind.create(bytes.buffer, bytes.byteOffset, bytes.byteLength / kind.bytes);
  }
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return kind.create(copy.buffer, 0, bytes.byteLength / kind.bytes);
}

/**
 * JSON cannot write NaN or the infinities, so tensor values in JSON name them (as protobuf's
 * JSON mapping does): `"NaN"`, `"Infinity"`, `"-Infinity"`. Everything else is a number.
 */
export const NON_FINITE_NAMES = ["NaN", "Infinity", "-Infinity"] as const;

/** One tensor element as JSON carries it: a number, or a non-finite value by name. */
export type JsonNumber = number | "NaN" | "Infinity" | "-Infinity";

/** The number a JSON tensor element stands for. */
export function fromJsonNumber(value: JsonNumber): number {
  if (typeof value === "number") return value;
  return value === "NaN" ? NaN : value === "Infinity" ? Infinity : -Infinity;
}

/**
 * A typed array's values as a plain array, each through `map`, in a loop: `Array.from` and
 * spreading go through the iterator, 20 times slower in V8 (27 µs for 1000 floats).
 */
export function arrayOf<T = number>(
  data: ArrayLike<number>,
  map: (value: number) => T = (value) => value as T,
): T[] {
  const out = new Array<T>(data.length);
  for (let i = 0; i < data.length; i++) out[i] = map(data[i]);
  return out;
}

/** A number as a JSON tensor element: non-finite values by name. */
export function toJsonNumber(value: number): JsonNumber {
  if (Number.isFinite(value)) return value;
  return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
}

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

/** The little-endian bytes of the data as base64 (the wire encoding of docs/api.md). */
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
