import { ok, strictEqual } from "node:assert/strict";
import {
  ARITHMETIC,
  arithmeticSimd,
  BINARY_REFERENCE as REFERENCE,
  hardSwishSimd,
  hasElementwiseSimd,
  type OperandForm,
} from "./f32_elementwise_simd.ts";
import { hardSwishFloat32 } from "./hard_swish.ts";
import {
  lanesReady,
  privateThreadBudget,
  setThreadBudget,
  splitCallCount,
} from "./compute_lanes.ts";
import { seededFloats } from "./seeded_random.ts";
import { realmHeap } from "./wasm_heap.ts";

/** Values with the special ones mixed in: NaN, infinities, signed zeros, tiny divisors. */
function values(n: number, seed: number): Float32Array {
  const v = seededFloats(n, seed, 16);
  const special = [NaN, Infinity, -Infinity, 0, -0, 1e-40, 3, -3];
  for (let i = 0; i < n; i += 7) v[i] = special[(i / 7) % special.length];
  return v;
}

/** A float32 view in the realm's heap (as arena tensors are), filled with `data`. */
function inHeap(data: Float32Array): Float32Array {
  const heap = realmHeap();
  const at = heap.allocate(data.byteLength || 4);
  const view = new Float32Array(heap.buffer(), at, data.length);
  view.set(data);
  return view;
}

function sameBits(actual: Float32Array, expected: Float32Array, what: string) {
  strictEqual(actual.length, expected.length, what);
  for (let i = 0; i < actual.length; i++) {
    ok(Object.is(actual[i], expected[i]), `${what}[${i}]: ${actual[i]}, expected ${expected[i]}`);
  }
}

/** MINIMUM and MAXIMUM have no activation: only the unbounded range applies to them. */
const unclamped = (op: string) => op === "min" || op === "max";

Deno.test("SIMD ADD/SUB/MUL/DIV/MINIMUM/MAXIMUM equal the reference bit for bit (NaN, signed zeros): tails, one-value operands, activations, operands in and out of the heap", () => {
  ok(hasElementwiseSimd(), "Deno has WebAssembly SIMD");
  const ranges: [number, number][] = [[-Infinity, Infinity], [0, Infinity], [0, 6], [-1, 1]];
  for (const n of [1, 3, 4, 5, 8, 17, 64, 1027]) {
    for (const op of ARITHMETIC) {
      const pairs: [OperandForm, OperandForm][] = [
        ["tensor", "tensor"],
        ["tensor", "scalar"],
        ["scalar", "tensor"],
      ];
      for (const [aForm, bForm] of pairs) {
        for (const [min, max] of unclamped(op) ? ranges.slice(0, 1) : ranges) {
          for (const heap of [false, true]) {
            const [aLength, bLength] = [aForm, bForm].map((f) => f === "scalar" ? 1 : n);
            const a = values(aLength, n + 1);
            const b = values(bLength, n + 2);
            const expected = new Float32Array(n);
            REFERENCE[op](a, [aLength], b, [bLength], expected, [n], min, max);
            const out = heap ? inHeap(new Float32Array(n)) : new Float32Array(n);
            ok(arithmeticSimd(
              op,
              { data: heap ? inHeap(a) : a, form: aForm },
              {
                data: b,
                form: bForm,
              },
              out,
              min,
              max,
            ));
            sameBits(out, expected, `${op} ${aForm}x${bForm} [${min}, ${max}] heap ${heap}`);
          }
        }
      }
    }
  }
});

Deno.test("SIMD arithmetic with a per-channel row (NHWC scale or bias) equals the reference, either side", () => {
  // Widths that are not a multiple of 4 (6625 classes) go a row at a time.
  for (const [rows, width] of [[1, 4], [3, 8], [50, 24], [7, 96], [3, 6625], [5, 3], [4, 1]]) {
    for (const op of ARITHMETIC) {
      for (const rowFirst of [false, true]) {
        const tensor = values(rows * width, width);
        const row = values(width, width + 1);
        const [a, b] = rowFirst ? [row, tensor] : [tensor, row];
        const shapes = rowFirst ? [[1, 1, width], [1, rows, width]] : [[1, rows, width], [width]];
        const expected = new Float32Array(rows * width);
        const [lo, hi] = unclamped(op) ? [-Infinity, Infinity] : [0, 6];
        REFERENCE[op](a, shapes[0], b, shapes[1], expected, [1, rows, width], lo, hi);
        const out = inHeap(new Float32Array(rows * width));
        const form = (t: Float32Array): OperandForm => t === row ? "row" : "tensor";
        ok(arithmeticSimd(op, { data: a, form: form(a) }, { data: b, form: form(b) }, out, lo, hi));
        sameBits(out, expected, `${op} ${rows}x${width}, row first ${rowFirst}`);
      }
    }
  }
  // A row that does not divide the output has no kernel: the caller runs the reference.
  const out = new Float32Array(6);
  strictEqual(
    arithmeticSimd(
      "add",
      { data: values(6, 1), form: "tensor" },
      {
        data: values(4, 2),
        form: "row",
      },
      out,
      -Infinity,
      Infinity,
    ),
    false,
  );
});

Deno.test("SIMD HARD_SWISH equals the reference bit for bit, tails included", () => {
  for (const n of [1, 4, 6, 33, 1024]) {
    for (const heap of [false, true]) {
      const x = values(n, n);
      const expected = new Float32Array(n);
      hardSwishFloat32(x, expected);
      const out = heap ? inHeap(new Float32Array(n)) : new Float32Array(n);
      ok(hardSwishSimd(heap ? inHeap(x) : x, out));
      sameBits(out, expected, `hard swish of ${n}, heap ${heap}`);
    }
  }
});

Deno.test("large element-wise calls split across compute lanes give the bits of the reference", async () => {
  const n = 200_003, width = 96;
  const a = values(n, 40), b = values(n, 41), row = values(width, 42), one = values(1, 43);
  const shape = [n];
  const budget = privateThreadBudget(3);
  setThreadBudget(budget);
  try {
    // Lanes start on the first split attempt; run once so they exist, then wait for them.
    arithmeticSimd(
      "add",
      { data: a, form: "tensor" },
      { data: b, form: "tensor" },
      new Float32Array(n),
      -Infinity,
      Infinity,
    );
    const ready = await lanesReady(2, 20_000);
    ok(ready >= 2, `${ready} of 2 lanes ready`);
    const cases: [string, () => Float32Array, () => Float32Array][] = [
      ["mul of tensors", () => {
        const out = new Float32Array(n);
        ok(
          arithmeticSimd(
            "mul",
            { data: a, form: "tensor" },
            { data: b, form: "tensor" },
            out,
            0,
            6,
          ),
        );
        return out;
      }, () => {
        const out = new Float32Array(n);
        REFERENCE.mul(a, shape, b, shape, out, shape, 0, 6);
        return out;
      }],
      ["sub of one value", () => {
        const out = new Float32Array(n);
        ok(
          arithmeticSimd(
            "sub",
            { data: one, form: "scalar" },
            { data: a, form: "tensor" },
            out,
            -Infinity,
            Infinity,
          ),
        );
        return out;
      }, () => {
        const out = new Float32Array(n);
        REFERENCE.sub(one, [1], a, shape, out, shape, -Infinity, Infinity);
        return out;
      }],
      ["add of a row", () => {
        const rows = 2048, out = new Float32Array(rows * width);
        ok(
          arithmeticSimd(
            "add",
            { data: a.subarray(0, rows * width), form: "tensor" },
            { data: row, form: "row" },
            out,
            -1,
            1,
          ),
        );
        return out;
      }, () => {
        const rows = 2048, out = new Float32Array(rows * width);
        REFERENCE.add(
          a.subarray(0, rows * width),
          [rows, width],
          row,
          [width],
          out,
          [rows, width],
          -1,
          1,
        );
        return out;
      }],
      ["hard swish", () => {
        const out = new Float32Array(n);
        ok(hardSwishSimd(a, out));
        return out;
      }, () => {
        const out = new Float32Array(n);
        hardSwishFloat32(a, out);
        return out;
      }],
    ];
    for (const [name, simd, reference] of cases) {
      const before = splitCallCount();
      const got = simd();
      ok(splitCallCount() > before, `${name}: the call was split`);
      sameBits(got, reference(), name);
      strictEqual(budget.counters[0], 2, `${name}: free threads restored`);
    }
  } finally {
    setThreadBudget(undefined);
  }
});
