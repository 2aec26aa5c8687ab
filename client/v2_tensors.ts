/**
 * Tensor data of the Open Inference Protocol client (`v2.ts`): little-endian bytes of the
 * binary tensor extension each way, and JSON data as the datatype's typed array. FP16 works
 * where the platform has no Float16Array (Node 20): halves are converted by hand.
 */

import { arrayOf } from "./tensor.ts";

/** Decoded tensor data: the datatype's typed array; booleans for BOOL. */
export type TensorData = ArrayLike<number> | ArrayLike<bigint> | boolean[];

/** Bytes per element of the fixed-size datatypes. */
const ELEMENT_BYTES: Record<string, number> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  FP16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
};

/** A half-precision value as a number (for platforms without Float16Array). */
function halfToNumber(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** A number as half-precision bits (round to nearest even), for platforms without Float16Array. */
function numberToHalf(value: number): number {
  const f32 = new Float32Array([value]);
  const bits = new Uint32Array(f32.buffer)[0];
  const sign = (bits >> 16) & 0x8000;
  const exponent = ((bits >> 23) & 0xff) - 127 + 15;
  let mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);
  if (exponent >= 31) return sign | 0x7c00;
  if (exponent <= 0) {
    if (exponent < -10) return sign;
    mantissa |= 0x800000;
    const shift = 14 - exponent;
    const half = mantissa >> shift;
    const rest = mantissa & ((1 << shift) - 1);
    const midpoint = 1 << (shift - 1);
    return sign | (half + (rest > midpoint || (rest === midpoint && half & 1) ? 1 : 0));
  }
  const half = (exponent << 10) | (mantissa >> 13);
  const rest = mantissa & 0x1fff;
  return sign | (half + (rest > 0x1000 || (rest === 0x1000 && half & 1) ? 1 : 0));
}

/** Little-endian bytes of `data` as `datatype`. */
export function encodeTensor(
  datatype: string,
  data: ArrayLike<number> | readonly unknown[] | ArrayBufferView,
): Uint8Array {
  if (ArrayBuffer.isView(data) && !Array.isArray(data)) {
    const view = data as ArrayBufferView;
    return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  }
  const values = Array.isArray(data) ? data.flat(Infinity) : arrayOf(data as ArrayLike<number>);
  const size = ELEMENT_BYTES[datatype];
  if (size === undefined) throw new Error(`datatype ${datatype} cannot be sent as binary`);
  const bytes = new Uint8Array(values.length * size);
  const view = new DataView(bytes.buffer);
  values.forEach((raw, i) => {
    const v = Number(raw);
    const at = i * size;
    switch (datatype) {
      case "BOOL":
      case "UINT8":
        view.setUint8(at, datatype === "BOOL" ? (raw ? 1 : 0) : v);
        break;
      case "INT8":
        view.setInt8(at, v);
        break;
      case "UINT16":
        view.setUint16(at, v, true);
        break;
      case "INT16":
        view.setInt16(at, v, true);
        break;
      case "FP16":
        view.setUint16(at, numberToHalf(v), true);
        break;
      case "UINT32":
        view.setUint32(at, v, true);
        break;
      case "INT32":
        view.setInt32(at, v, true);
        break;
      case "FP32":
        view.setFloat32(at, v, true);
        break;
      case "UINT64":
        view.setBigUint64(at, BigInt(raw as number), true);
        break;
      case "INT64":
        view.setBigInt64(at, BigInt(raw as number), true);
        break;
      case "FP64":
        view.setFloat64(at, v, true);
        break;
    }
  });
  return bytes;
}

/** Binary tensor bytes (little-endian) as the datatype's array; booleans for BOOL. */
export function decodeTensor(datatype: string, bytes: Uint8Array): TensorData {
  const copy = bytes.slice(); // aligned, and not a view of the whole response
  const buffer = copy.buffer;
  switch (datatype) {
    case "BOOL":
      return arrayOf(copy, (b) => b !== 0);
    case "UINT8":
      return copy;
    case "INT8":
      return new Int8Array(buffer);
    case "UINT16":
      return new Uint16Array(buffer);
    case "INT16":
      return new Int16Array(buffer);
    case "FP16": {
      const halves = new Uint16Array(buffer);
      const f16 = (globalThis as { Float16Array?: new (b: ArrayBuffer) => ArrayLike<number> })
        .Float16Array;
      return f16 ? new f16(buffer) : Float32Array.from(halves, halfToNumber);
    }
    case "UINT32":
      return new Uint32Array(buffer);
    case "INT32":
      return new Int32Array(buffer);
    case "FP32":
      return new Float32Array(buffer);
    case "UINT64":
      return new BigUint64Array(buffer);
    case "INT64":
      return new BigInt64Array(buffer);
    case "FP64":
      return new Float64Array(buffer);
    default:
      return copy;
  }
}

/** JSON data of a response as the datatype's array (booleans stay booleans). */
export function fromJson(datatype: string, data: unknown[]): TensorData {
  const flat = data.flat(Infinity);
  if (datatype === "BOOL") return flat.map(Boolean);
  const numbers = flat.map((v) =>
    v === "NaN" ? NaN : v === "Infinity" ? Infinity : v === "-Infinity" ? -Infinity : Number(v)
  );
  switch (datatype) {
    case "FP32":
      return Float32Array.from(numbers);
    case "INT32":
      return Int32Array.from(numbers);
    case "UINT8":
      return Uint8Array.from(numbers);
    case "INT8":
      return Int8Array.from(numbers);
    case "INT16":
      return Int16Array.from(numbers);
    case "UINT16":
      return Uint16Array.from(numbers);
    case "UINT32":
      return Uint32Array.from(numbers);
    case "INT64":
      return BigInt64Array.from(flat.map((v) => BigInt(v as number)));
    case "UINT64":
      return BigUint64Array.from(flat.map((v) => BigInt(v as number)));
    default: // FP16, FP64: as numbers
      return Float64Array.from(numbers);
  }
}
