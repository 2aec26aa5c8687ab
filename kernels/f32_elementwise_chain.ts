/**
 * A chain of float32 element-wise operations run as one pass (fused at preparation, see
 * `driver/chain_fusion.ts`): the output is computed in blocks of a few thousand elements,
 * each block going through every operation while it stays in the L1 cache, instead of each
 * operation streaming whole tensors through memory. Every operation is the same SIMD kernel
 * as unfused (`f32_elementwise_simd.ts`), rounding to float32 after each one, so the result
 * is bit for bit that of the operations run one by one.
 */
import { anySimdRuntime } from "./f32_conv_simd128.ts";
import { type ArithmeticOp, FORMS, type FormSuffix } from "./f32_elementwise_codegen.ts";
import { BINARY_REFERENCE, type Operand } from "./f32_elementwise_simd.ts";
import { hardSwishFloat32 } from "./hard_swish.ts";

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

/** Elements per block at least (a block is also a whole number of every row operand). */
const BLOCK_ELEMENTS = 2048;
/** Blocks longer than this (rows of unusual widths) are not worth fusing. */
export const MAX_BLOCK_ELEMENTS = 16384;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

/**
 * The block length of a chain whose row operands have `widths` (each a multiple of 4), or
 * undefined when it exceeds {@link MAX_BLOCK_ELEMENTS}.
 */
export function chainBlock(widths: readonly number[]): number | undefined {
  const period = widths.reduce((l, w) => l / gcd(l, w) * w, 4);
  if (period > MAX_BLOCK_ELEMENTS) return undefined;
  return Math.ceil(BLOCK_ELEMENTS / period) * period;
}

/** The export suffix of an operation's operand forms (the chained value is a tensor). */
function suffixOf(operands: ChainOperation["operands"]): FormSuffix | undefined {
  const forms = operands.map((o) => o === CHAINED ? "tensor" : o.form);
  return (Object.keys(FORMS) as FormSuffix[]).find((k) =>
    FORMS[k][0] === forms[0] && FORMS[k][1] === forms[1]
  );
}

/**
 * Runs `chain` into `out` (every tensor operand of `out`'s length, rows of widths dividing
 * it by multiples of 4). Returns false (nothing written) where this engine has no SIMD or
 * the chain has a form no kernel takes.
 */
export function elementwiseChainSimd(
  chain: readonly ChainOperation[],
  out: Float32Array,
): boolean {
  const rt = anySimdRuntime();
  const n = out.length;
  const external = chain.flatMap((c) => c.operands.filter((o) => o !== CHAINED));
  const widths = external.filter((o) => o.form === "row").map((o) => o.data.length);
  const block = chainBlock(widths);
  const names = chain.map((c) => c.op === "hard_swish" ? "hard_swish" : suffixOf(c.operands));
  if (!rt || block === undefined || names.includes(undefined)) return false;
  if (widths.some((w) => w % 4 !== 0 || n % w !== 0)) return false;
  // Operands in the heap are read in place; the others are copied to scratch once per run.
  const { heap } = rt;
  const views = [...new Set(external.map((o) => o.data)), out];
  const found = views.map((v) => heap.addressOf(v));
  const missing = views.reduce((sum, v, i) => sum + (found[i] === undefined ? v.byteLength : 0), 0);
  let at = heap.scratch(missing + 4 * block);
  const temporary = at;
  at += 4 * block;
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
  for (let start = 0; start < vectorized; start += block) {
    const count = Math.min(block, vectorized - start);
    chain.forEach((c, k) => {
      const target = k === chain.length - 1 ? outAt + 4 * start : temporary;
      const args = c.operands.map((o) => {
        if (o === CHAINED) return temporary;
        const base = address.get(o.data)!;
        return o.form === "tensor" ? base + 4 * start : base;
      });
      if (c.op === "hard_swish") {
        rt.hard_swish(args[0], target, count);
        return;
      }
      const row = c.operands.find((o) => o !== CHAINED && o.form === "row");
      const width = row === undefined || row === CHAINED ? 0 : row.data.length;
      const name = `${c.op}_${names[k] as FormSuffix}` as const;
      rt[name](args[0], args[1], target, count, c.min, c.max, 4 * width);
    });
  }
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
