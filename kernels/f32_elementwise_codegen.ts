/**
 * Code generation of the WebAssembly SIMD float32 element-wise kernels: ADD, SUB, MUL, DIV,
 * MINIMUM and MAXIMUM of two operands (each a tensor of the output's layout, one value, or a
 * repeated row), clamped to the fused activation's range, and HARD_SWISH. They are part of
 * the convolution kernels' module (`f32_simd_codegen.ts`), so compute lanes run them too;
 * `f32_elementwise_simd.ts` calls them.
 */
import { FunctionBuilder } from "./wasm_assembler.ts";

/** The binary operations, in export order. */
export const ARITHMETIC = ["add", "sub", "mul", "div", "min", "max"] as const;
export type ArithmeticOp = typeof ARITHMETIC[number];

/**
 * How an operand is read: a tensor of the output's layout (one element per lane), one value
 * (in every lane), or a row of `width` elements repeated along the output (a per-channel
 * scale or bias of an NHWC tensor).
 */
export type OperandForm = "tensor" | "scalar" | "row";

/** The forms of (a, b) the module has a function for, by export suffix. */
export const FORMS = {
  vv: ["tensor", "tensor"],
  vs: ["tensor", "scalar"],
  sv: ["scalar", "tensor"],
  vr: ["tensor", "row"],
  rv: ["row", "tensor"],
} as const satisfies Record<string, readonly [OperandForm, OperandForm]>;

/** An export suffix: the forms of (a, b). */
export type FormSuffix = keyof typeof FORMS;

const LANE_BYTES = 16;

/**
 * `out[i] = clamp(a[i] op b[i])` over `n` elements (a multiple of 4), each operand read in
 * its form; a row operand of `width` bytes starts over at its end.
 */
function binaryFunction(
  op: ArithmeticOp,
  forms: readonly [OperandForm, OperandForm],
): FunctionBuilder {
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

/** The element-wise kernels' export names: `add_vv`, `add_vs`, ... `max_rv`, `hard_swish`. */
export type ElementwiseKernel = `${ArithmeticOp}_${FormSuffix}` | "hard_swish";

/** The element-wise kernels' export names, in export order. */
export const ELEMENTWISE_KERNELS: readonly ElementwiseKernel[] = [
  ...ARITHMETIC.flatMap((op) =>
    Object.keys(FORMS).map((suffix) => `${op}_${suffix as FormSuffix}` as const)
  ),
  "hard_swish",
];

/** Each element-wise kernel's name and code, in export order. */
export function elementwiseFunctions(): [ElementwiseKernel, FunctionBuilder][] {
  return ELEMENTWISE_KERNELS.map((name) => {
    if (name === "hard_swish") return [name, hardSwishFunction()];
    const [op, suffix] = name.split("_") as [ArithmeticOp, FormSuffix];
    return [name, binaryFunction(op, FORMS[suffix])];
  });
}
