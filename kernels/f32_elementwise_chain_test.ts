/**
 * A chain of element-wise operations run as one blocked pass gives the bits of the same
 * operations run one by one: special values, tails, one-value and row operands, the
 * chained value on either side, HARD_SWISH first, inside and last, operands in the kernel
 * heap and outside it, and lengths across several blocks.
 */
import { ok, strictEqual } from "node:assert/strict";
import { CHAINED, type ChainOperation, elementwiseChainSimd } from "./f32_elementwise_chain.ts";
import { BINARY_REFERENCE, type Operand } from "./f32_elementwise_simd.ts";
import { hardSwishFloat32 } from "./hard_swish.ts";
import { seededFloats } from "./seeded_random.ts";
import { realmHeap } from "./wasm_heap.ts";

/** Values with the special ones mixed in: NaN, infinities, signed zeros, tiny divisors. */
function values(n: number, seed: number): Float32Array {
  const v = seededFloats(n, seed, 16);
  const special = [NaN, Infinity, -Infinity, 0, -0, 1e-40, 3, -3];
  for (let i = 0; i < n; i += 7) v[i] = special[(i / 7) % special.length];
  return v;
}

/** The chain run operation by operation on the reference kernels. */
function oneByOne(chain: readonly ChainOperation[], n: number): Float32Array {
  let value = new Float32Array(n);
  for (const c of chain) {
    const next = new Float32Array(n);
    const data = c.operands.map((o) => o === CHAINED ? value : o.data);
    // A row of width w broadcasts over the output seen as [n / w, w].
    const row = c.operands.find((o) => o !== CHAINED && o.form === "row");
    const width = row && row !== CHAINED ? row.data.length : n;
    const full = [n / width, width];
    const shapes = c.operands.map((o) =>
      o === CHAINED || o.form === "tensor" ? full : o.form === "scalar" ? [1] : [width]
    );
    if (c.op === "hard_swish") hardSwishFloat32(data[0], next);
    else BINARY_REFERENCE[c.op](data[0], shapes[0], data[1], shapes[1], next, full, c.min, c.max);
    value = next;
  }
  return value;
}

function sameBits(actual: Float32Array, expected: Float32Array, what: string) {
  strictEqual(actual.length, expected.length, what);
  for (let i = 0; i < actual.length; i++) {
    ok(Object.is(actual[i], expected[i]), `${what}[${i}]: ${actual[i]}, expected ${expected[i]}`);
  }
}

const tensor = (data: Float32Array): Operand => ({ data, form: "tensor" });
const scalar = (data: Float32Array): Operand => ({ data, form: "scalar" });
const row = (data: Float32Array): Operand => ({ data, form: "row" });
const FREE = { min: -Infinity, max: Infinity };

Deno.test("an element-wise chain run as one pass equals its operations one by one, bit for bit", () => {
  for (const n of [1, 3, 4, 5, 96, 2048 + 96 * 3, 12 * 1001]) {
    const x = values(n, 1), y = values(n, 2), one = values(1, 3);
    const rowOf = (width: number, seed: number) =>
      n % width === 0 ? row(values(width, seed)) : scalar(one);
    const chains: [string, ChainOperation[]][] = [
      ["add, mul by one value, hard swish, sub from a tensor", [
        { op: "add", operands: [tensor(x), tensor(y)], ...FREE },
        { op: "mul", operands: [CHAINED, scalar(one)], min: -1, max: 1 },
        { op: "hard_swish", operands: [CHAINED], ...FREE },
        { op: "sub", operands: [tensor(y), CHAINED], min: 0, max: 6 },
      ]],
      ["hard swish first, then a row (12) and a row (96), div, max", [
        { op: "hard_swish", operands: [tensor(x)], ...FREE },
        { op: "mul", operands: [rowOf(12, 4), CHAINED], ...FREE },
        { op: "add", operands: [CHAINED, rowOf(96, 5)], min: 0, max: Infinity },
        { op: "div", operands: [scalar(one), CHAINED], ...FREE },
        { op: "max", operands: [CHAINED, tensor(x)], ...FREE },
      ]],
      ["min of a tensor and one value, then sub a row", [
        { op: "min", operands: [tensor(y), scalar(one)], ...FREE },
        { op: "sub", operands: [CHAINED, rowOf(4, 6)], ...FREE },
      ]],
    ];
    for (const [name, chain] of chains) {
      const want = oneByOne(chain, n);
      const got = new Float32Array(n).fill(7);
      ok(elementwiseChainSimd(chain, got), `${name} (${n}) runs as one pass`);
      sameBits(got, want, `${name} (${n})`);
      // The output and an input in the kernel heap (an executable's arena) are used in place.
      const heap = realmHeap();
      const outAt = heap.allocate(4 * n), xAt = heap.allocate(4 * n);
      try {
        const out = new Float32Array(heap.buffer(), outAt, n);
        const inHeap = new Float32Array(heap.buffer(), xAt, n);
        inHeap.set(x);
        const swapped = chain.map((c) => ({
          ...c,
          operands: c.operands.map((o) => o !== CHAINED && o.data === x ? tensor(inHeap) : o),
        }));
        ok(elementwiseChainSimd(swapped, out));
        sameBits(out.slice(), want, `${name} (${n}) in the heap`);
      } finally {
        heap.release(outAt);
        heap.release(xAt);
      }
    }
  }
});

Deno.test("a chain with a row operand whose width is not a multiple of 4 is not run as one pass", () => {
  const x = values(30, 1);
  const chain: ChainOperation[] = [
    { op: "add", operands: [tensor(x), row(values(6, 2))], ...FREE },
    { op: "hard_swish", operands: [CHAINED], ...FREE },
  ];
  strictEqual(elementwiseChainSimd(chain, new Float32Array(30)), false);
});
