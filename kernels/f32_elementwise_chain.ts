/**
 * A chain of float32 element-wise operations run as one pass (fused at preparation, see
 * `driver/compilation/chain_fusion.ts`): a WebAssembly SIMD loop generated for the chain's operations and
 * operand forms keeps each group of four values in a register from the first operation to the
 * last, so the intermediates are never stored. Each operation is the instruction sequence of
 * its unfused kernel (`f32_elementwise_codegen.ts`: the operation, then the clamp) rounding
 * to float32, so the result is bit for bit that of the operations run one by one. Each chain
 * shape is compiled once per thread.
 */
import { anySimdRuntime } from "./simd_runtime.ts";
import type { ArithmeticOp } from "./f32_elementwise_codegen.ts";
import { BINARY_REFERENCE, type Operand } from "./f32_elementwise_simd.ts";
import { hardSwishFloat32 } from "./hard_swish.ts";
import { FunctionBuilder, ModuleBuilder } from "./wasm_assembler.ts";
import type { WasmHeap } from "./wasm_heap.ts";

/** The previous operation's result, as an operand of the next one. */
export const CHAINED = "chained";

/**
 * One operation of a chain: arithmetic on two operands (clamped to `min`/`max`) or HARD_SWISH
 * on one; after the first, exactly one operand is {@link CHAINED}.
 */
export interface ChainOperation {
  op: ArithmeticOp | "hard_swish";
  operands: readonly (Operand | typeof CHAINED)[];
  min: number;
  max: number;
}

/** Chains run as one pass so far in this realm (tests read it). */
let passes = 0;

/** How many chains this realm ran as one pass. */
export function chainPassCount(): number {
  return passes;
}

const LANE_BYTES = 16;

/** Code generation of the chain's loop: `(operand pointers..., out, n)`, n a multiple of 4. */
function chainFunction(chain: readonly ChainOperation[]): FunctionBuilder {
  const operands = chain.flatMap((c) => c.operands.filter((o) => o !== CHAINED));
  const f = new FunctionBuilder(Array(operands.length + 2).fill("i32"));
  const out = operands.length, n = operands.length + 1;
  const [value, x, three, zero, six] = f.locals("v128", 5);
  const bounds = chain.map(() => f.locals("v128", 2));
  const splats = operands.map((o) => o.form === "scalar" ? f.local("v128") : -1);
  const rows = operands.map((o) => o.form === "row" ? f.locals("i32", 2) : []);
  f.f32Const(3).f32x4Splat().localSet(three);
  f.f32Const(0).f32x4Splat().localSet(zero);
  f.f32Const(6).f32x4Splat().localSet(six);
  chain.forEach((c, k) => {
    f.f32Const(c.min).f32x4Splat().localSet(bounds[k][0]);
    f.f32Const(c.max).f32x4Splat().localSet(bounds[k][1]);
  });
  operands.forEach((o, i) => {
    if (o.form === "scalar") f.localGet(i).v128Load32Splat().localSet(splats[i]);
    if (o.form === "row") {
      f.localGet(i).localTee(rows[i][0]).i32Const(4 * o.data.length).i32Add().localSet(rows[i][1]);
    }
  });
  f.block(() => {
    f.localGet(n).i32Eqz().brIf(0);
    f.loop(() => {
      let next = 0;
      const push = (o: Operand | typeof CHAINED) => {
        if (o === CHAINED) return void f.localGet(value);
        const i = next++;
        if (o.form === "scalar") f.localGet(splats[i]);
        else f.localGet(i).v128Load();
      };
      chain.forEach((c, k) => {
        if (c.op === "hard_swish") {
          push(c.operands[0]);
          f.localTee(x).localGet(three).f32x4Add().localGet(zero).f32x4Pmax();
          f.localGet(six).f32x4Pmin().localGet(x).f32x4Mul().localGet(six).f32x4Div();
          f.localSet(value);
          return;
        }
        c.operands.forEach(push);
        if (c.op === "add") f.f32x4Add();
        else if (c.op === "sub") f.f32x4Sub();
        else if (c.op === "mul") f.f32x4Mul();
        else if (c.op === "div") f.f32x4Div();
        else if (c.op === "min") f.f32x4Pmin();
        else f.f32x4Pmax();
        f.localGet(bounds[k][0]).f32x4Pmax().localGet(bounds[k][1]).f32x4Pmin().localSet(value);
      });
      f.localGet(out).localGet(value).v128Store();
      operands.forEach((o, i) => {
        if (o.form === "scalar") return;
        f.localGet(i).i32Const(LANE_BYTES).i32Add().localSet(i);
        if (o.form === "row") {
          // At the row's end, back to its start.
          f.block(() => {
            f.localGet(i).localGet(rows[i][1]).i32Ne().brIf(0);
            f.localGet(rows[i][0]).localSet(i);
          });
        }
      });
      f.localGet(out).i32Const(LANE_BYTES).i32Add().localSet(out);
      f.localGet(n).i32Const(4).i32Sub().localTee(n).brIf(0);
    });
  });
  return f;
}

/** What the generated loop depends on: operations, forms, clamps and row widths. */
function chainKey(chain: readonly ChainOperation[]): string {
  return JSON.stringify(chain.map((c) => [
    c.op,
    c.min,
    c.max,
    c.operands.map((o) => o === CHAINED ? o : o.form === "row" ? o.data.length : o.form),
  ]));
}

type ChainKernel = (...args: number[]) => void;

/** The compiled loops of this thread, by {@link chainKey}. */
const compiled = new Map<string, ChainKernel>();

function chainKernel(heap: WasmHeap, chain: readonly ChainOperation[]): ChainKernel {
  const key = chainKey(chain);
  let kernel = compiled.get(key);
  if (!kernel) {
    const bytes = new ModuleBuilder({ shared: true }).export("chain", chainFunction(chain))
      .encode();
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes), {
      env: { memory: heap.memory },
    });
    kernel = instance.exports.chain as ChainKernel;
    compiled.set(key, kernel);
  }
  return kernel;
}

/**
 * Runs `chain` into `out` (every tensor operand of `out`'s length, rows of widths dividing
 * it by multiples of 4). Returns false (nothing written) where this engine has no SIMD or a
 * row's width is not a multiple of 4.
 */
export function elementwiseChainSimd(
  chain: readonly ChainOperation[],
  out: Float32Array,
): boolean {
  const rt = anySimdRuntime();
  const n = out.length;
  const external = chain.flatMap((c) => c.operands.filter((o) => o !== CHAINED));
  const widths = external.filter((o) => o.form === "row").map((o) => o.data.length);
  if (!rt || widths.some((w) => w % 4 !== 0 || n % w !== 0)) return false;
  // Operands in the heap are read in place; the others are copied to scratch.
  const { heap } = rt;
  const views = [...new Set(external.map((o) => o.data)), out];
  const found = views.map((v) => heap.addressOf(v));
  const missing = views.reduce((sum, v, i) => sum + (found[i] === undefined ? v.byteLength : 0), 0);
  let at = missing > 0 ? heap.scratch(missing) : 0;
  const address = new Map<Float32Array, number>();
  views.forEach((v, i) => {
    if (found[i] !== undefined) {
      address.set(v, found[i]!);
      return;
    }
    if (i < views.length - 1) heap.f32.set(v, at / 4);
    address.set(v, at);
    at += v.byteLength;
  });
  const outAt = address.get(out)!;
  const vectorized = n & ~3;
  const kernel = chainKernel(heap, chain);
  kernel(...external.map((o) => address.get(o.data)!), outAt, vectorized);
  // The last 1-3 elements (no rows then: a row's width divides the length in fours).
  if (vectorized < n) runTail(chain, vectorized, out);
  if (found[views.length - 1] === undefined) {
    out.set(heap.f32.subarray(outAt / 4, outAt / 4 + vectorized));
  }
  passes++;
  return true;
}

/** The chain on elements `from` to the end, on the reference kernels. */
function runTail(chain: readonly ChainOperation[], from: number, out: Float32Array): void {
  const shape = [out.length - from];
  let value = new Float32Array(shape[0]);
  for (const c of chain) {
    const next = new Float32Array(shape[0]);
    const data = c.operands.map((o) =>
      o === CHAINED ? value : o.form === "scalar" ? o.data : o.data.subarray(from)
    );
    const shapes = c.operands.map((o) => o !== CHAINED && o.form === "scalar" ? [1] : shape);
    if (c.op === "hard_swish") hardSwishFloat32(data[0], next);
    else BINARY_REFERENCE[c.op](data[0], shapes[0], data[1], shapes[1], next, shape, c.min, c.max);
    value = next;
  }
  out.set(value, from);
}
