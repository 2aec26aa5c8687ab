/**
 * ONNX tensors held by the converter (initializers, Constant nodes, folded values) and
 * their NNAPI forms. ONNX int64 (sizes, indexes, token ids) is kept exactly as numbers while
 * folding and becomes TENSOR_INT32 in the model, with a range check.
 */
import type { TensorData } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";
import { type Int64, int64, list, onnx, type TensorProto } from "./decode.ts";
import { hostTensorBudget } from "./limits.ts";

const DataType = onnx.TensorProto.DataType;

/** The element types the converter handles. */
export type ElementType =
  | "float32"
  | "float16"
  | "float64"
  | "int64"
  | "int32"
  | "int8"
  | "uint8"
  | "bool";

/** A tensor value known at conversion; int64 and float64 live in a Float64Array. */
export interface HostTensor {
  type: ElementType;
  dims: number[];
  data: Float32Array | Float16Array | Float64Array | Int32Array | Int8Array | Uint8Array;
  /**
   * Set on an int64 tensor holding extents known only at execution (a Shape of a dynamic
   * value) as `extentSymbol`s. Such a tensor is only moved (gathered, sliced, concatenated)
   * and read as a Reshape target; computing with it or making it an operand is refused.
   */
  partial?: boolean;
}

/** Symbols start below every int64 value a real shape computation holds. */
const SYMBOL_BASE = -(2 ** 40);
/** Axes per operand in a symbol's number. */
const SYMBOL_AXES = 64;

/** The stand-in for extent `axis` of model operand `operand`, known only at execution. */
export function extentSymbol(operand: number, axis: number): number {
  return SYMBOL_BASE - (operand * SYMBOL_AXES + axis);
}

/** The operand and axis an extent symbol stands for, or undefined for a plain value. */
export function symbolOf(value: number): { operand: number; axis: number } | undefined {
  if (value > SYMBOL_BASE) return undefined;
  const code = SYMBOL_BASE - value;
  return { operand: Math.floor(code / SYMBOL_AXES), axis: code % SYMBOL_AXES };
}

const ELEMENT_TYPES: Partial<Record<number, ElementType>> = {
  [DataType.FLOAT]: "float32",
  [DataType.FLOAT16]: "float16",
  [DataType.DOUBLE]: "float64",
  [DataType.INT64]: "int64",
  [DataType.INT32]: "int32",
  [DataType.INT8]: "int8",
  [DataType.UINT8]: "uint8",
  [DataType.BOOL]: "bool",
};

/** The ONNX data type's name, for messages. */
export function dataTypeName(code: number): string {
  return DataType[code] ?? `data type ${code}`;
}

/** The element type of an ONNX data type code, or a message saying it is not handled. */
export function elementType(code: number): ElementType | string {
  return ELEMENT_TYPES[code] ?? `element type ${dataTypeName(code)} is not supported`;
}

/**
 * An empty host tensor of `type` and `dims`, computed at conversion: checked against the
 * conversion's limits (elements per tensor, bytes folded in all) before it is allocated.
 */
export function allocateHost(type: ElementType, dims: readonly number[]): HostTensor {
  const TypedArray = arrayClass(type);
  const n = hostTensorBudget().reserve(dims, TypedArray.BYTES_PER_ELEMENT, true);
  return { type, dims: [...dims], data: new TypedArray(n) };
}

/**
 * `count` zeroed float64 values a rule computes with at conversion (a DFT matrix, constants
 * of an operand's shape), checked and counted as {@link allocateHost}'s tensors are.
 */
export function hostValues(count: number): Float64Array {
  hostTensorBudget().reserve([count], Float64Array.BYTES_PER_ELEMENT, true);
  return new Float64Array(count);
}

function arrayClass(type: ElementType) {
  switch (type) {
    case "float32":
      return Float32Array;
    case "float16":
      return Float16Array;
    case "int32":
      return Int32Array;
    case "int8":
      return Int8Array;
    case "uint8":
    case "bool":
      return Uint8Array;
    default:
      return Float64Array;
  }
}

/** A host tensor from numbers. */
export function hostTensor(type: ElementType, dims: readonly number[], values: ArrayLike<number>) {
  const t = allocateHost(type, dims);
  if (t.data.length !== values.length) {
    throw new Error(`${values.length} values for shape [${dims}]`);
  }
  t.data.set(values as ArrayLike<number>);
  return t;
}

/** Decodes an initializer or attribute tensor. */
export function tensorFromProto(proto: TensorProto): HostTensor {
  const code = proto.dataType ?? 0;
  const type = elementType(code);
  if (typeof type !== "string" || !isElementType(type)) {
    throw new Error(`tensor '${proto.name ?? ""}': ${type}`);
  }
  const dims = list(proto.dims).map((d) => int64(d as Int64));
  const TypedArray = arrayClass(type);
  // The file's own bytes: checked against the element limit, not counted as folded. The
  // values must be there before anything is allocated for them (a shape alone is no data).
  const n = hostTensorBudget().reserve(dims, TypedArray.BYTES_PER_ELEMENT, false);
  const name = proto.name ?? "";
  const raw = proto.rawData;
  if (raw && raw.byteLength > 0) {
    const width = rawWidth(type);
    if (raw.byteLength !== n * width) {
      throw new Error(`tensor '${name}' has ${raw.byteLength} bytes for ${n} elements`);
    }
    const tensor: HostTensor = { type, dims, data: new TypedArray(n) };
    readRaw(tensor, raw, n);
    return tensor;
  }
  const stored = type === "float32"
    ? proto.floatData
    : type === "float64"
    ? proto.doubleData
    : type === "int64"
    ? proto.int64Data
    : proto.int32Data;
  const count = list(stored).length;
  if (count !== n) {
    throw new Error(`tensor '${name}' holds ${count} values for shape [${dims}]`);
  }
  const values: ArrayLike<number> = type === "int64"
    ? list(proto.int64Data).map((v) => int64(v as Int64))
    : list(stored as number[]);
  const tensor: HostTensor = { type, dims, data: new TypedArray(n) };
  if (type === "float16") {
    // float16 values travel as their bit patterns in int32_data.
    new Uint16Array(tensor.data.buffer).set(values);
  } else {
    tensor.data.set(values);
  }
  return tensor;
}

function isElementType(type: string): type is ElementType {
  return Object.values(ELEMENT_TYPES).includes(type as ElementType);
}

/** Bytes per element of a type in an ONNX tensor's raw data. */
function rawWidth(type: ElementType): number {
  return type === "int64" || type === "float64"
    ? 8
    : type === "float32" || type === "int32"
    ? 4
    : type === "float16"
    ? 2
    : 1;
}

function readRaw(tensor: HostTensor, raw: Uint8Array, n: number): void {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (tensor.type === "int64") {
    for (let i = 0; i < n; i++) tensor.data[i] = Number(view.getBigInt64(i * 8, true));
  } else {
    // Every other type is little-endian in the file and in memory: copy the bytes.
    new Uint8Array(tensor.data.buffer).set(raw);
  }
}

/** The NNAPI operand type a host tensor becomes, and its data in that type. */
export function nnapiConstant(t: HostTensor): { type: OperandType; data: TensorData } {
  switch (t.type) {
    case "float32":
      return { type: "TENSOR_FLOAT32", data: t.data as Float32Array };
    case "float16":
      return { type: "TENSOR_FLOAT16", data: t.data as Float16Array };
    case "float64":
      return { type: "TENSOR_FLOAT32", data: Float32Array.from(t.data) };
    case "bool":
      return { type: "TENSOR_BOOL8", data: t.data as Uint8Array };
    case "int8":
    case "uint8":
      throw new Error(`a constant ${t.type} tensor outside a quantize/dequantize pair`);
    default:
      return { type: "TENSOR_INT32", data: toInt32(t.data, "a constant") };
  }
}

/** int64 values as int32, refusing any outside the int32 range. */
export function toInt32(values: ArrayLike<number>, what: string): Int32Array {
  const out = new Int32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v < -0x80000000 || v > 0x7fffffff) {
      throw new Error(`${what} holds ${v}, outside the int32 range NNAPI tensors have`);
    }
    out[i] = v;
  }
  return out;
}
