/**
 * WebAssembly SIMD float32 element-wise kernels: ADD, SUB, MUL, DIV, MINIMUM and MAXIMUM of
 * two tensors of one layout or of a tensor and one value (splatted), clamped to the fused
 * activation's range, and HARD_SWISH. Four lanes per instruction; each lane rounds as the reference's
 * `Math.fround` of the double result does (a double holds a float sum, product or quotient
 * closely enough that rounding it to float32 gives the float32 operation's result), and the
 * clamp uses `pmax`/`pmin`, which keep NaN as the reference's comparisons do.
 *
 * Wasm reads only its own memory: operands outside the realm's {@link WasmHeap} (constants,
 * tensors of another device) are copied into its scratch area first. Tails of fewer than
 * four elements run on the reference kernels.
 */
import { ARITHMETIC_FLOAT32, type ClampedFloat32Kernel } from "./elementwise_binary.ts";
import { minMaxBroadcast } from "./elementwise_broadcast.ts";
import { hardSwishFloat32 } from "./hard_swish.ts";
import { FunctionBuilder, ModuleBuilder } from "./wasm_assembler.ts";
import { realmHeap, type WasmHeap } from "./wasm_heap.ts";

/**
 * The reference kernel of each binary operation (tails and widths the vectors do not cover
 * run on it). MINIMUM and MAXIMUM have no fused activation: callers pass an infinite range.
 */
export const BINARY_REFERENCE = {
  ...ARITHMETIC_FLOAT32,
  min: (a, aShape, b, bShape, out, outShape) =>
    minMaxBroadcast(a, aShape, b, bShape, out, outShape, true),
  max: (a, aShape, b, bShape, out, outShape) =>
    minMaxBroadcast(a, aShape, b, bShape, out, outShape, false),
} as const satisfies Record<string, ClampedFloat32Kernel>;

/** The binary operations, in export order. */
export type ArithmeticOp = keyof typeof BINARY_REFERENCE;
export const ARITHMETIC = Object.keys(BINARY_REFERENCE) as ArithmeticOp[];

/**
 * How an operand is read: a tensor of the output's layout (one element per lane), one value
 * (in every lane), or a row of `width` elements repeated along the output (a per-channel
 * scale or bias of an NHWC tensor).
 */
export type OperandForm = "tensor" | "scalar" | "row";

/** The forms of (a, b) the module has a function for, by export suffix. */
const FORMS: Record<string, [OperandForm, OperandForm]> = {
  vv: ["tensor", "tensor"],
  vs: ["tensor", "scalar"],
  sv: ["scalar", "tensor"],
  vr: ["tensor", "row"],
  rv: ["row", "tensor"],
};

const LANE_BYTES = 16;

/**
 * `out[i] = clamp(a[i] op b[i])` over `n` elements (a multiple of 4), each operand read in
 * its form; a row operand of `width` bytes starts over at its end.
 */
function binaryFunction(op: ArithmeticOp, forms: [OperandForm, OperandForm]): FunctionBuilder {
  // (a, b, out, n, min, max, width)
  const f = new FunctionBuilder(["i32", "i32", "i32", "i32", "f32", "f32", "i32"]);
  const [a, b, out, n, min, max, width] = [0, 1, 2, 3, 4, 5, 6];
  const [lo, hi] = f.locals("v128", 2);
  const [rowStart, rowEnd] = f.locals("i32", 2);
  const pointers = [a, b];
  f.localGet(min).f32x4Splat().localSet(lo);
  f.localGet(max).f32x4Splat().localSet(hi);
  const row = forms.indexOf("row");
  if (row >= 0) {
    f.localGet(pointers[row]).localTee(rowStart).localGet(width).i32Add().localSet(rowEnd);
  }
  f.block(() => {
    f.localGet(n).i32Eqz().brIf(0);
    f.loop(() => {
      f.localGet(out);
      forms.forEach((form, i) => {
        f.localGet(pointers[i]);
        if (form === "scalar") f.v128Load32Splat();
        else f.v128Load();
      });
      if (op === "add") f.f32x4Add();
      else if (op === "sub") f.f32x4Sub();
      else if (op === "mul") f.f32x4Mul();
      else if (op === "div") f.f32x4Div();
      // pmin(a, b) = b < a ? b : a and pmax(a, b) = a < b ? b : a: std::min and std::max.
      else if (op === "min") f.f32x4Pmin();
      else f.f32x4Pmax();
      f.localGet(lo).f32x4Pmax().localGet(hi).f32x4Pmin();
      f.v128Store();
      forms.forEach((form, i) => {
        if (form === "scalar") return;
        f.localGet(pointers[i]).i32Const(LANE_BYTES).i32Add().localSet(pointers[i]);
        if (form === "row") {
          // At the row's end, back to its start.
          f.block(() => {
            f.localGet(pointers[i]).localGet(rowEnd).i32Ne().brIf(0);
            f.localGet(rowStart).localSet(pointers[i]);
          });
        }
      });
      f.localGet(out).i32Const(LANE_BYTES).i32Add().localSet(out);
      f.localGet(n).i32Const(4).i32Sub().localTee(n).brIf(0);
    });
  });
  return f;
}

/** `out[i] = x[i] * min(6, max(0, x[i] + 3)) / 6` over `n` elements (a multiple of 4). */
function hardSwishFunction(): FunctionBuilder {
  const f = new FunctionBuilder(["i32", "i32", "i32"]);
  const [x, out, n] = [0, 1, 2];
  const [value, three, zero, six] = f.locals("v128", 4);
  f.f32Const(3).f32x4Splat().localSet(three);
  f.f32Const(0).f32x4Splat().localSet(zero);
  f.f32Const(6).f32x4Splat().localSet(six);
  f.block(() => {
    f.localGet(n).i32Eqz().brIf(0);
    f.loop(() => {
      f.localGet(out);
      f.localGet(x).v128Load().localTee(value);
      f.localGet(three).f32x4Add().localGet(zero).f32x4Pmax().localGet(six).f32x4Pmin();
      f.localGet(value).f32x4Mul();
      f.localGet(six).f32x4Div();
      f.v128Store();
      f.localGet(x).i32Const(LANE_BYTES).i32Add().localSet(x);
      f.localGet(out).i32Const(LANE_BYTES).i32Add().localSet(out);
      f.localGet(n).i32Const(4).i32Sub().localTee(n).brIf(0);
    });
  });
  return f;
}

/** The module's bytes: `add_vv`, `add_vs`, ... `div_rv` (see FORMS), `hard_swish`. */
export function elementwiseModuleBytes(): Uint8Array<ArrayBuffer> {
  const module = new ModuleBuilder({ shared: true });
  for (const op of ARITHMETIC) {
    for (const [suffix, forms] of Object.entries(FORMS)) {
      module.export(`${op}_${suffix}`, binaryFunction(op, forms));
    }
  }
  return module.export("hard_swish", hardSwishFunction()).encode();
}

type WasmFunction = (...args: number[]) => void;

interface Runtime {
  heap: WasmHeap;
  exports: Record<string, WasmFunction>;
}

let runtime: Runtime | null | undefined;

/** This realm's instance of the kernels, or null where the engine has no SIMD. */
function elementwiseRuntime(): Runtime | null {
  if (runtime !== undefined) return runtime;
  runtime = null;
  try {
    const bytes = elementwiseModuleBytes();
    if (WebAssembly.validate(bytes)) {
      const heap = realmHeap();
      const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
        env: { memory: heap.memory },
      });
      runtime = { heap, exports: instance.exports as unknown as Record<string, WasmFunction> };
    }
  } catch {
    runtime = null;
  }
  return runtime;
}

/** Whether this engine runs the SIMD element-wise kernels. */
export function hasElementwiseSimd(): boolean {
  return elementwiseRuntime() !== null;
}

/**
 * Runs `kernel` on heap addresses of `inputs` and `out`: a view that lies in the heap is
 * used in place; the others are copied into one scratch area (and `out` copied back after).
 */
function inHeap(
  heap: WasmHeap,
  inputs: readonly Float32Array[],
  out: Float32Array,
  kernel: (inputs: number[], out: number) => void,
): void {
  const views = [...inputs, out];
  const found = views.map((v) => heap.addressOf(v));
  const missing = views.reduce((sum, v, i) => sum + (found[i] === undefined ? v.byteLength : 0), 0);
  let at = missing > 0 ? heap.scratch(missing) : 0;
  const placed = views.map((v, i) => {
    if (found[i] !== undefined) return found[i]!;
    const address = at;
    if (i < inputs.length) heap.f32.set(v, address / 4);
    at += v.byteLength;
    return address;
  });
  const outAt = placed[inputs.length];
  kernel(placed.slice(0, inputs.length), outAt);
  if (found[inputs.length] === undefined) {
    out.set(heap.f32.subarray(outAt / 4, outAt / 4 + out.length));
  }
}

/** An operand of {@link arithmeticSimd} and how it is read. */
export interface Operand {
  data: Float32Array;
  form: OperandForm;
}

/**
 * `out = clamp(a op b)`, each operand read in its form (a row's length dividing the
 * output's). Returns false (nothing written) where this engine has no SIMD or the forms have
 * no kernel.
 */
export function arithmeticSimd(
  op: ArithmeticOp,
  a: Operand,
  b: Operand,
  out: Float32Array,
  min: number,
  max: number,
): boolean {
  const rt = elementwiseRuntime();
  const suffix = Object.keys(FORMS).find((k) => FORMS[k][0] === a.form && FORMS[k][1] === b.form);
  if (!rt || !suffix) return false;
  const n = out.length;
  const row = a.form === "row" ? a.data : b.form === "row" ? b.data : undefined;
  if (row && n % row.length !== 0) return false;
  if (row && row.length % 4 !== 0) {
    rowByRow(rt, { op, a, b, out, min, max });
    return true;
  }
  const vectorized = n & ~3;
  if (vectorized > 0) {
    inHeap(rt.heap, [a.data, b.data], out, ([aAt, bAt], outAt) => {
      rt.exports[`${op}_${suffix}`](aAt, bAt, outAt, vectorized, min, max, 4 * (row?.length ?? 0));
    });
  }
  if (vectorized < n) {
    // Only tensor and scalar forms have tails (a row divides the output in fours).
    const rest = [n - vectorized];
    const tail = (t: Operand) => t.form === "scalar" ? t.data : t.data.subarray(vectorized);
    const shape = (t: Operand) => t.form === "scalar" ? [1] : rest;
    BINARY_REFERENCE[op](
      tail(a),
      shape(a),
      tail(b),
      shape(b),
      out.subarray(vectorized),
      rest,
      min,
      max,
    );
  }
  return true;
}

/**
 * A row operand whose width is not a multiple of 4 (6625 class biases): each output row is
 * one tensor-by-tensor call over its whole vectors, and its last 1-3 elements run on the
 * reference kernel.
 */
function rowByRow(
  rt: Runtime,
  { op, a, b, out, min, max }: {
    op: ArithmeticOp;
    a: Operand;
    b: Operand;
    out: Float32Array;
    min: number;
    max: number;
  },
): void {
  const width = (a.form === "row" ? a.data : b.data).length;
  const rows = out.length / width;
  const vectorized = width & ~3;
  const start = (t: Operand, r: number) => t.form === "row" ? 0 : r * width;
  if (vectorized > 0) {
    inHeap(rt.heap, [a.data, b.data], out, ([aAt, bAt], outAt) => {
      for (let r = 0; r < rows; r++) {
        const [ai, bi] = [4 * start(a, r), 4 * start(b, r)];
        rt.exports[`${op}_vv`](aAt + ai, bAt + bi, outAt + 4 * r * width, vectorized, min, max, 0);
      }
    });
  }
  const rest = [width - vectorized];
  for (let r = 0; r < rows; r++) {
    const tail = (t: Operand) => {
      const from = start(t, r) + vectorized;
      return t.data.subarray(from, from + rest[0]);
    };
    const at = r * width + vectorized;
    BINARY_REFERENCE[op](
      tail(a),
      rest,
      tail(b),
      rest,
      out.subarray(at, at + rest[0]),
      rest,
      min,
      max,
    );
  }
}

/** `out = hard_swish(x)`; false (nothing written) where this engine has no SIMD. */
export function hardSwishSimd(x: Float32Array, out: Float32Array): boolean {
  const rt = elementwiseRuntime();
  if (!rt) return false;
  const n = out.length;
  const vectorized = n & ~3;
  if (vectorized > 0) {
    inHeap(rt.heap, [x], out, ([xAt], outAt) => rt.exports.hard_swish(xAt, outAt, vectorized));
  }
  if (vectorized < n) hardSwishFloat32(x.subarray(vectorized), out.subarray(vectorized));
  return true;
}
