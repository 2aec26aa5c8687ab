/**
 * Typed-array representation of operand data: one element type per NNAPI operand type,
 * so kernels read and write tensors without conversions.
 */
import type { OperandType } from "./types.ts";

/** Any typed array an operand's data may live in. */
export type TensorData =
  | Float32Array
  | Float16Array
  | Int32Array
  | Uint32Array
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array;

/** Per-channel quantization (TENSOR_QUANT8_SYMM_PER_CHANNEL). */
export interface ChannelQuant {
  channelDim: number;
  scales: number[];
}

/** What is known of a tensor without its data: type, shape and quantization. */
export interface TensorInfo {
  type: OperandType;
  /** Dimensions; 0 marks an unknown extent (only before shapes are resolved). */
  shape: readonly number[];
  scale: number;
  zeroPoint: number;
  channelQuant?: ChannelQuant;
}

/** A tensor with data; `data` is null for an omitted optional input. */
export interface Tensor extends TensorInfo {
  data: TensorData | null;
}

interface ElementKind {
  bytes: number;
  create(buffer: ArrayBufferLike, byteOffset: number, length: number): TensorData;
}

const F32: ElementKind = { bytes: 4, create: (b, o, n) => new Float32Array(b, o, n) };
const F16: ElementKind = { bytes: 2, create: (b, o, n) => new Float16Array(b, o, n) };
const I32: ElementKind = { bytes: 4, create: (b, o, n) => new Int32Array(b, o, n) };
const U32: ElementKind = { bytes: 4, create: (b, o, n) => new Uint32Array(b, o, n) };
const U8: ElementKind = { bytes: 1, create: (b, o, n) => new Uint8Array(b, o, n) };
const I8: ElementKind = { bytes: 1, create: (b, o, n) => new Int8Array(b, o, n) };
const U16: ElementKind = { bytes: 2, create: (b, o, n) => new Uint16Array(b, o, n) };
const I16: ElementKind = { bytes: 2, create: (b, o, n) => new Int16Array(b, o, n) };

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

/** Largest tensor the driver accepts (bytes): bigger ones cannot be allocated anyway. */
export const MAX_TENSOR_BYTES = 2 ** 31 - 1;

/** Size in bytes of one element of the type. */
export function elementBytes(type: OperandType): number {
  return ELEMENT_KINDS[type].bytes;
}

/** Scalars have no dimensions; everything else is a tensor. */
export function isScalarType(type: OperandType): boolean {
  return !type.startsWith("TENSOR_");
}

/** Whether the type carries a scale/zero point that defines its real value. */
export function isQuantizedType(type: OperandType): boolean {
  return type.startsWith("TENSOR_QUANT");
}

/** Whether values of the type are floating point (JSON numbers kept as they are). */
export function isFloatType(type: OperandType): boolean {
  return type === "FLOAT32" || type === "FLOAT16" || type === "TENSOR_FLOAT32" ||
    type === "TENSOR_FLOAT16";
}

/** Whether two shapes are equal, extent by extent. */
export function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Number of elements of a fully known shape (1 for scalars). */
export function elementCount(shape: readonly number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** Whether every dimension is known (no 0 extents). Scalars are always fully specified. */
export function isFullySpecified(shape: readonly number[]): boolean {
  return shape.every((d) => d > 0);
}

/** Byte size of a tensor with a known shape. */
export function byteSize(type: OperandType, shape: readonly number[]): number {
  return elementCount(shape) * elementBytes(type);
}

/** A typed view of the type over (a part of) a buffer; `byteOffset` must be aligned. */
export function typedView(
  type: OperandType,
  buffer: ArrayBufferLike,
  byteOffset: number,
  length: number,
): TensorData {
  return ELEMENT_KINDS[type].create(buffer, byteOffset, length);
}

/** A fresh zero-filled array of the type. */
export function allocate(type: OperandType, length: number): TensorData {
  const kind = ELEMENT_KINDS[type];
  return kind.create(new ArrayBuffer(length * kind.bytes), 0, length);
}

/**
 * Copies little-endian bytes into a fresh, aligned typed array of the type (the wire
 * format of API.md). The byte length must be a multiple of the element size.
 */
export function fromBytes(type: OperandType, bytes: Uint8Array): TensorData {
  const kind = ELEMENT_KINDS[type];
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return kind.create(copy.buffer, 0, bytes.byteLength / kind.bytes);
}

/**
 * A typed array over the same bytes when they are aligned for the type (no copy: memory
 * pool inputs and freshly decoded payloads), else an aligned copy.
 */
export function viewBytes(type: OperandType, bytes: Uint8Array): TensorData {
  const kind = ELEMENT_KINDS[type];
  if (bytes.byteOffset % kind.bytes !== 0) return fromBytes(type, bytes);
  return kind.create(bytes.buffer, bytes.byteOffset, bytes.byteLength / kind.bytes);
}

/** The bytes of a typed array, without copying. */
export function toBytes(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * JSON cannot write NaN or the infinities, so tensor values in JSON name them (as protobuf's
 * JSON mapping does): `"NaN"`, `"Infinity"`, `"-Infinity"`. Everything else is a number.
 */
export const NON_FINITE_NAMES = ["NaN", "Infinity", "-Infinity"] as const;

/** One tensor element as JSON carries it. */
export type JsonNumber = number | typeof NON_FINITE_NAMES[number];

/** The number a JSON tensor element stands for. */
export function fromJsonNumber(value: JsonNumber): number {
  if (typeof value === "number") return value;
  return value === "NaN" ? NaN : value === "Infinity" ? Infinity : -Infinity;
}

/** A typed array of the type holding JSON values (checked by {@link numberFitsType} first). */
export function fromNumbers(type: OperandType, values: readonly JsonNumber[]): TensorData {
  const out = allocate(type, values.length);
  for (let i = 0; i < values.length; i++) out[i] = fromJsonNumber(values[i]);
  return out;
}

/** The value a float operand type would store for a number (float16 and float32 rounding). */
function roundToFloatType(type: OperandType, value: number): number {
  return type === "FLOAT16" || type === "TENSOR_FLOAT16"
    ? Math.f16round(value)
    : Math.fround(value);
}

/**
 * Whether a JSON value fits the element type: integers in range, floats that stay finite in
 * the type (1e39 does not fit float32), and the non-finite names for float types only.
 */
export function numberFitsType(type: OperandType, value: JsonNumber): boolean {
  if (typeof value === "string") return isFloatType(type);
  if (isFloatType(type)) return Number.isFinite(roundToFloatType(type, value));
  if (!Number.isInteger(value)) return false;
  switch (type) {
    case "BOOL":
    case "TENSOR_BOOL8":
      return value === 0 || value === 1;
    case "TENSOR_QUANT8_ASYMM":
      return value >= 0 && value <= 255;
    case "TENSOR_QUANT8_ASYMM_SIGNED":
    case "TENSOR_QUANT8_SYMM":
    case "TENSOR_QUANT8_SYMM_PER_CHANNEL":
      return value >= -128 && value <= 127;
    case "TENSOR_QUANT16_ASYMM":
      return value >= 0 && value <= 65535;
    case "TENSOR_QUANT16_SYMM":
      return value >= -32768 && value <= 32767;
    case "UINT32":
      return value >= 0 && value <= 0xffffffff;
    default:
      return value >= -0x80000000 && value <= 0x7fffffff;
  }
}

/** Why a JSON value does not fit the type, for messages. */
export function misfitReason(type: OperandType, value: JsonNumber): string {
  if (typeof value === "string") return `${type} is not a float type and has no ${value}`;
  if (isFloatType(type) && Number.isFinite(value)) {
    return `${value} is beyond the range of ${type} (it would become infinite; write "Infinity" or "-Infinity" for an infinite value)`;
  }
  return `${value} does not fit ${type}`;
}

/** A number as a JSON tensor element: non-finite values by name. */
export function toJsonNumber(value: number): JsonNumber {
  if (Number.isFinite(value)) return value;
  return Number.isNaN(value) ? "NaN" : value > 0 ? "Infinity" : "-Infinity";
}

/** JSON values of a typed array: float16 widened, non-finite values named, integers as is. */
export function toJsonNumbers(data: TensorData): JsonNumber[] {
  return Array.from(data as ArrayLike<number>, toJsonNumber);
}
