/**
 * Open Inference Protocol tensors and NNAPI operands: datatypes mapped both ways, shapes with
 * -1 for extents NNAPI leaves unknown (0), and the JSON `data` of a tensor (flat or nested,
 * row-major; booleans for BOOL) as the driver's numbers.
 */
import { invalid } from "../../nnapi/errors.ts";
import type { JsonNumber, TensorData } from "../../nnapi/tensor.ts";
import { arrayOf, toJsonNumbers } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";

/** The protocol's datatype of each NNAPI tensor type a model input or output may have. */
const DATATYPES: Partial<Record<OperandType, string>> = {
  TENSOR_FLOAT32: "FP32",
  TENSOR_FLOAT16: "FP16",
  TENSOR_INT32: "INT32",
  TENSOR_QUANT8_ASYMM: "UINT8",
  TENSOR_QUANT8_ASYMM_SIGNED: "INT8",
  TENSOR_QUANT8_SYMM: "INT8",
  TENSOR_QUANT16_ASYMM: "UINT16",
  TENSOR_QUANT16_SYMM: "INT16",
  TENSOR_BOOL8: "BOOL",
  FLOAT32: "FP32",
  FLOAT16: "FP16",
  INT32: "INT32",
  UINT32: "UINT32",
  BOOL: "BOOL",
};

/** The protocol's datatype of an operand type. */
export function oipDatatype(type: string): string {
  const datatype = DATATYPES[type as OperandType];
  if (!datatype) throw invalid(`operand type ${type} has no Open Inference Protocol datatype`);
  return datatype;
}

/** Whether an operand type is quantized (its scale and zero point are model parameters). */
export function isQuantized(type: string): boolean {
  return type.includes("QUANT");
}

/** NNAPI dimensions as a protocol shape: an unknown extent (0) is -1. */
export function oipShape(dimensions: readonly number[]): number[] {
  return dimensions.map((d) => (d === 0 ? -1 : d));
}

/** The elements of JSON `data`, flat or nested row-major, checked against `datatype`. */
export function jsonElements(
  data: unknown,
  datatype: string,
  path: (string | number)[],
): JsonNumber[] {
  if (!Array.isArray(data)) throw invalid(`${path.join(".")}: data must be an array`, { path });
  const flat = flatten(data, path);
  if (datatype === "BOOL") {
    return flat.map((value, i) => {
      if (typeof value !== "boolean") {
        throw invalid(`${path.join(".")}[${i}]: BOOL data are true or false, not ${value}`, {
          path,
        });
      }
      return value ? 1 : 0;
    });
  }
  for (const [i, value] of flat.entries()) {
    const named = value === "NaN" || value === "Infinity" || value === "-Infinity";
    if (typeof value !== "number" && !(named && datatype.startsWith("FP"))) {
      throw invalid(`${path.join(".")}[${i}]: ${datatype} data are numbers, not ${value}`, {
        path,
      });
    }
  }
  return flat as JsonNumber[];
}

/** How deep `data` may nest: far beyond any tensor's rank, far short of the stack's depth. */
export const MAX_DATA_DEPTH = 64;

/** Nested arrays' elements in order, without recursion; INVALID_ARGUMENT past the depth. */
function flatten(data: unknown[], path: (string | number)[]): unknown[] {
  const elements: unknown[] = [];
  const open: { items: unknown[]; next: number }[] = [{ items: data, next: 0 }];
  while (open.length > 0) {
    const top = open[open.length - 1];
    if (top.next === top.items.length) {
      open.pop();
      continue;
    }
    const item = top.items[top.next++];
    if (!Array.isArray(item)) {
      elements.push(item);
      continue;
    }
    if (open.length === MAX_DATA_DEPTH) {
      throw invalid(`${path.join(".")}: data nest deeper than ${MAX_DATA_DEPTH} levels`, {
        path,
      });
    }
    open.push({ items: item, next: 0 });
  }
  return elements;
}

/** A tensor's data as protocol JSON: numbers (non-finite floats by name), booleans for BOOL. */
export function jsonData(datatype: string, data: TensorData): (JsonNumber | boolean)[] {
  if (datatype === "BOOL") return arrayOf(data as ArrayLike<number>, (v) => v !== 0);
  return toJsonNumbers(data);
}
