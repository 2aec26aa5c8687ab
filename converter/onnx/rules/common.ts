/**
 * What the ONNX rules share: output specs, axes, constants, booleans as numbers and back,
 * and host arithmetic for folding.
 */
import { broadcastShape, forEachBroadcastRow } from "../../../kernels/elementwise_binary.ts";
import { resolveAxis } from "../../../operations/common/axis.ts";
import { FUSED_NONE, type OperandType } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
export { broadcastDims } from "../emitted_shapes.ts";
import type { NodeView } from "../node_view.ts";
import {
  allocateHost,
  type ElementType,
  type HostTensor,
  hostValues,
  toInt32,
} from "../tensors.ts";

/** NNAPI's layout flag of the image operations: true = NCHW, the layout ONNX graphs use. */
export const NCHW = true;

const OPERAND_TYPES: Partial<Record<ElementType, OperandType>> = {
  float32: "TENSOR_FLOAT32",
  float16: "TENSOR_FLOAT16",
  int32: "TENSOR_INT32",
  int64: "TENSOR_INT32",
  bool: "TENSOR_BOOL8",
};

/** The output spec of an operation whose result has the element type of `name`. */
export function sameTypeAs(ctx: ConversionContext, name: string): OutputSpec {
  const value = ctx.value(name);
  if (value.kind === "operand" && (value.elementType === "uint8" || value.elementType === "int8")) {
    // A quantized value keeps its quantization through operations that move it.
    const { type, scale, zeroPoint } = value.operand;
    return { type, elementType: value.elementType, quant: { scale, zeroPoint } };
  }
  if (value.kind === "operand" && value.operand.type === "TENSOR_FLOAT32") {
    // An integer carried as float32 (dynamic quantization) stays so.
    return { type: "TENSOR_FLOAT32", elementType: value.elementType };
  }
  return specOf(ctx.elementType(name));
}

/** The output spec for an ONNX element type. */
export function specOf(elementType: ElementType): OutputSpec {
  const type = OPERAND_TYPES[elementType];
  if (!type) throw new Error(`element type ${elementType} is not supported here`);
  return { type, elementType };
}

/** A float constant in the type of `spec` (TENSOR_FLOAT16 or TENSOR_FLOAT32). */
export function floatConstant(
  ctx: ConversionContext,
  spec: OutputSpec,
  dims: readonly number[],
  values: ArrayLike<number>,
): BuiltOperand {
  return spec.type === "TENSOR_FLOAT16"
    ? ctx.builder.constant("TENSOR_FLOAT16", dims, Float16Array.from(values))
    : ctx.builder.constant("TENSOR_FLOAT32", dims, Float32Array.from(values));
}

/** A 1-D TENSOR_INT32 constant: the axes, shapes and windows operations take. */
export function int32Vector(ctx: ConversionContext, values: ArrayLike<number>): BuiltOperand {
  // Checked, not wrapped: an int64 past int32 is refused (Int32Array.from wraps 2^32 + 2 to 2).
  return ctx.builder.constant("TENSOR_INT32", [values.length], toInt32(values, "a shape vector"));
}

/** A constant of `spec`'s type: TENSOR_FLOAT16/32, TENSOR_INT32 or TENSOR_BOOL8 (nonzero). */
export function tensorConstant(
  ctx: ConversionContext,
  spec: OutputSpec,
  dims: readonly number[],
  values: ArrayLike<number>,
): BuiltOperand {
  switch (spec.type) {
    case "TENSOR_FLOAT16":
    case "TENSOR_FLOAT32":
      return floatConstant(ctx, spec, dims, values);
    case "TENSOR_INT32":
      return ctx.builder.constant("TENSOR_INT32", dims, toInt32(values, "a constant"));
    case "TENSOR_BOOL8":
      return ctx.builder.constant("TENSOR_BOOL8", dims, Uint8Array.from(values, (v) => v ? 1 : 0));
    default:
      throw new Error(`a constant of type ${spec.type} is not built here`);
  }
}

/**
 * A tensor of the shape `shape` holds (a TENSOR_INT32 operand, its values known at
 * execution) filled with `value`: FILL for int32 and float32, float16 through a CAST, bool
 * by comparing float32 with 0. `spec.dims` declares what is known of the result's extents.
 */
export function filled(
  ctx: ConversionContext,
  shape: BuiltOperand,
  value: number,
  spec: OutputSpec & { dims: readonly number[] },
): BuiltOperand {
  if (spec.type === "TENSOR_INT32") {
    return ctx.emit("FILL", [shape, ctx.builder.int32(value)], [spec])[0];
  }
  const float = { ...specOf("float32"), dims: spec.dims };
  const [numbers] = ctx.emit("FILL", [shape, ctx.builder.float32(value)], [float]);
  switch (spec.type) {
    case "TENSOR_FLOAT32":
      return numbers;
    case "TENSOR_FLOAT16":
      return ctx.emit("CAST", [numbers], [spec])[0];
    case "TENSOR_BOOL8":
      return boolFromNumbers(ctx, numbers, float);
    default:
      throw new Error(`a ${spec.type} tensor of a shape known only at execution is not built here`);
  }
}

/** A tensor of `like`'s shape at execution holding `value` (FILL of its SHAPE). */
export function filledLike(
  ctx: ConversionContext,
  like: BuiltOperand,
  value: number,
  spec: OutputSpec,
): BuiltOperand {
  const [shape] = ctx.emit("SHAPE", [like], [specOf("int32")]);
  return filled(ctx, shape, value, { ...spec, dims: like.dimensions });
}

/**
 * A TENSOR_BOOL8 operand as numbers of `spec`'s type (1 for true, 0 for false). NNAPI's CAST
 * takes no booleans, so SELECT picks between ones and zeros of the operand's shape: constants
 * where it is known at conversion, FILLed at execution otherwise.
 */
export function numbersFromBool(
  ctx: ConversionContext,
  cond: BuiltOperand,
  options: { spec: OutputSpec; what: string },
): BuiltOperand {
  const dims = cond.dimensions;
  const count = dims.length === 0 ? undefined : knownProduct(dims);
  const [ones, zeros] = count === undefined
    ? [1, 0].map((v) => filledLike(ctx, cond, v, options.spec))
    : [1, 0].map((v) => tensorConstant(ctx, options.spec, dims, hostValues(count).fill(v)));
  return ctx.emit("SELECT", [cond, ones, zeros], [{ ...options.spec, dims }])[0];
}

/** 2^16: int32 values split into `high * 2^16 + low`, both exact in float32. */
const HALF = 65536;

/**
 * int32 values moved by an operation NNAPI defines only on floats (a reshape, a
 * concatenation): each split exactly into `high * 2^16 + low` (DIV floors, so low is in
 * [0, 2^16)), both halves exact in float32, cast, moved by `move`, cast back and joined by
 * MUL and ADD. `spec` is the int32 result's.
 */
export function moveInt32Exactly(
  ctx: ConversionContext,
  xs: readonly BuiltOperand[],
  spec: OutputSpec,
  move: (parts: BuiltOperand[], float: OutputSpec) => BuiltOperand,
): BuiltOperand {
  const none = ctx.builder.int32(FUSED_NONE);
  const int32 = { type: spec.type, elementType: spec.elementType };
  const half = tensorConstant(ctx, int32, [1], [HALF]);
  const float = specOf("float32");
  const highs: BuiltOperand[] = [];
  const lows: BuiltOperand[] = [];
  for (const x of xs) {
    const [high] = ctx.emit("DIV", [x, half, none], [int32]);
    const [highPart] = ctx.emit("MUL", [high, half, none], [int32]);
    const [low] = ctx.emit("SUB", [x, highPart, none], [int32]);
    highs.push(ctx.emit("CAST", [high], [float])[0]);
    lows.push(ctx.emit("CAST", [low], [float])[0]);
  }
  const [movedHigh, movedLow] = [highs, lows].map((parts) => {
    const moved = move(parts, float);
    return ctx.emit("CAST", [moved], [{ ...int32, dims: moved.dimensions }])[0];
  });
  const [scaled] = ctx.emit("MUL", [movedHigh, half, none], [int32]);
  return ctx.emit("ADD", [scaled, movedLow, none], [spec])[0];
}

/** `x != 0` as TENSOR_BOOL8 (NaN is true, as ONNX's Cast to bool has it); `spec` is x's. */
export function boolFromNumbers(
  ctx: ConversionContext,
  x: BuiltOperand,
  spec: OutputSpec,
): BuiltOperand {
  const zero = tensorConstant(ctx, spec, [1], [0]);
  return ctx.emit("NOT_EQUAL", [x, zero], [specOf("bool")])[0];
}

/** Whether two shapes are the same extents (0 = known only at execution matches only 0). */
export function sameDims(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/** Refuses anything but float32/float16 values (for operations NNAPI defines on floats). */
export function requireFloat(ctx: ConversionContext, name: string): void {
  const type = ctx.elementType(name);
  if (type !== "float32" && type !== "float16") {
    throw new Error(`input '${name}' is ${type}; this operation takes float32 or float16`);
  }
}

/** A possibly negative ONNX axis as an index into a rank-`rank` shape (the driver's rule). */
export function normalizeAxis(axis: number, rank: number): number {
  return resolveAxis(axis, rank, "the node's axis");
}

/** The values of a constant integer input or attribute (an attribute before `sinceOpset`). */
export function intList(
  node: NodeView,
  ctx: ConversionContext,
  attribute: string,
  input: number,
  sinceOpset: number,
): number[] | undefined {
  if (ctx.opset < sinceOpset) return node.has(attribute) ? node.ints(attribute) : undefined;
  const name = node.input(input);
  if (!name) return undefined;
  return [...ctx.requireConstant(name, attribute).data];
}

/** The product of extents, or undefined when one is known only at execution. */
export function knownProduct(dims: readonly number[]): number | undefined {
  return dims.some((d) => d === 0) ? undefined : dims.reduce((a, b) => a * b, 1);
}

/** A broadcasting binary operation on host tensors (constant folding). */
export function foldBinary(
  a: HostTensor,
  b: HostTensor,
  f: (x: number, y: number) => number,
  type: ElementType = a.type,
): HostTensor {
  const shape = broadcastShape(a.dims, b.dims);
  if (!shape) throw new Error(`shapes [${a.dims}] and [${b.dims}] do not broadcast`);
  const out = allocateHost(type, shape);
  forEachBroadcastRow(a.dims, b.dims, shape, (ao, as, bo, bs, oo, n) => {
    for (let i = 0; i < n; i++) out.data[oo + i] = f(a.data[ao + i * as], b.data[bo + i * bs]);
  });
  return out;
}

/** A host tensor repeated to `dims` by broadcasting. */
export function broadcastTo(t: HostTensor, dims: readonly number[]): HostTensor {
  const target = allocateHost(t.type, dims);
  return foldBinary(t, target, (x) => x);
}

/** An elementwise function of a host tensor. */
export function foldUnary(t: HostTensor, f: (x: number) => number): HostTensor {
  const out = allocateHost(t.type, t.dims);
  for (let i = 0; i < t.data.length; i++) out.data[i] = f(t.data[i]);
  return out;
}

/** Integer division as ONNX does it for integer tensors (truncating). */
export function isIntegerType(type: ElementType): boolean {
  return type === "int32" || type === "int64" || type === "int8" || type === "uint8";
}
