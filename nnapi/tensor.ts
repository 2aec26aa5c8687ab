/**
 * Typed-array representation of operand data: one element type per NNAPI operand type,
 * so kernels read and write tensors without conversions. The element table and the JSON
 * number helpers are the SDK's (`client/tensor.ts`): one mapping on both sides of the wire.
 */
import type { OperandType } from "./types.ts";
import {
  allocate,
  arrayOf,
  elementBytes,
  elementCount,
  fromJsonNumber,
  type JsonNumber,
  type TensorArray as TensorData,
  toJsonNumber,
  typedView,
} from "../client/tensor.ts";

export {
  allocate,
  arrayOf,
  elementBytes,
  elementCount,
  fromJsonNumber,
  isScalarType,
  type JsonNumber,
  NON_FINITE_NAMES,
  type TensorArray as TensorData,
  toJsonNumber,
  typedView,
  viewBytes,
} from "../client/tensor.ts";

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

/** Largest tensor the driver accepts (bytes): bigger ones cannot be allocated anyway. */
export const MAX_TENSOR_BYTES = 2 ** 31 - 1;

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

/** Whether every dimension is known (no 0 extents). Scalars are always fully specified. */
export function isFullySpecified(shape: readonly number[]): boolean {
  return shape.every((d) => d > 0);
}

/** Byte size of a tensor with a known shape. */
export function byteSize(type: OperandType, shape: readonly number[]): number {
  return elementCount(shape) * elementBytes(type);
}

/**
 * Copies little-endian bytes into a fresh, aligned typed array of the type (the wire
 * format of docs/api.md). The byte length must be a multiple of the element size.
 */
export function fromBytes(type: OperandType, bytes: Uint8Array): TensorData {
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return typedView(type, copy.buffer, 0, bytes.byteLength / elementBytes(type));
}

/** The bytes of a typed array, without copying. */
export function toBytes(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/** A typed array of the type holding JSON values (checked by {@link numberFitsType} first). */
export function fromNumbers(type: OperandType, values: readonly JsonNumber[]): TensorData {
  const out = allocate(type, values.length);
  for (let i = 0; i < values.length; i++) out[i] = fromJsonNumber(values[i]);
  return out;
}

/**
 * JSON values as a tensor of `type` in one pass, or the index of the first value that does
 * not fit the type ({@link numberFitsType}: `misfitReason` says why). `out`, when given, is
 * an array of `type` and of the values' length that is written instead of a new one.
 */
export function fromCheckedNumbers(
  type: OperandType,
  values: readonly JsonNumber[],
  out: TensorData = allocate(type, values.length),
): TensorData | number {
  const n = values.length;
  if (type === "TENSOR_FLOAT32" || type === "FLOAT32") {
    for (let i = 0; i < n; i++) {
      const v = values[i];
      if (typeof v === "string") out[i] = fromJsonNumber(v);
      else if (Number.isFinite(Math.fround(v))) out[i] = v;
      else return i;
    }
    return out;
  }
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!numberFitsType(type, v)) return i;
    out[i] = fromJsonNumber(v);
  }
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

/** JSON values of a typed array: float16 widened, non-finite values named, integers as is. */
export function toJsonNumbers(data: TensorData): JsonNumber[] {
  return arrayOf(data as ArrayLike<number>, toJsonNumber);
}
