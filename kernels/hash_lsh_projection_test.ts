import { deepStrictEqual, strictEqual } from "node:assert/strict";
import {
  LSH_DENSE,
  LSH_SPARSE,
  LSH_SPARSE_DEPRECATED,
  lshProjection,
  runningSignBit,
} from "./hash_lsh_projection.ts";

// The model of the NNAPI CTS specs lsh_projection*.mod.py: 4 hash functions of 2 bits over
// 3 items of two int32 each (12-byte keys with the seed).
const SEEDS = new Float32Array([0.123, 0.456, -0.321, -0.654, 1.234, 5.678, -4.321, -8.765]);
const ITEMS = new Int32Array([12345, 54321, 67890, 9876, -12345678, -87654321]);
const WEIGHTS = new Float32Array([0.12, 0.34, 0.56]);

function items(data: Int32Array) {
  return { bytes: new Uint8Array(data.buffer), count: 3, itemBytes: 8 };
}

function project(type: number, seeds: ArrayLike<number>, weight: ArrayLike<number> | null) {
  const out = new Int32Array(type === LSH_DENSE ? 8 : 4);
  lshProjection(type, seeds, 4, 2, items(ITEMS), weight, out);
  return Array.from(out);
}

Deno.test("lshProjection() dense with weights gives the CTS lsh_projection bits", () => {
  deepStrictEqual(project(LSH_DENSE, SEEDS, WEIGHTS), [1, 1, 1, 0, 1, 1, 1, 0]);
});

Deno.test("lshProjection() sparse (deprecated) without weights gives the CTS signatures", () => {
  deepStrictEqual(project(LSH_SPARSE_DEPRECATED, SEEDS, null), [1, 2, 2, 0]);
});

Deno.test("lshProjection() sparse adds the per-function offset i << numBits", () => {
  deepStrictEqual(project(LSH_SPARSE, SEEDS, null), [1, 6, 10, 12]);
});

Deno.test("lshProjection() hashes float16 seeds as their float32 bytes (CTS float16)", () => {
  const seeds = new Float16Array(Array.from(SEEDS));
  const weights = new Float16Array(Array.from(WEIGHTS));
  deepStrictEqual(project(LSH_DENSE, seeds, weights), [1, 1, 1, 1, 1, 0, 0, 0]);
});

Deno.test("runningSignBit() weighs every item by 1 when the weight is omitted", () => {
  const ones = new Float32Array([1, 1, 1]);
  for (const seed of SEEDS) {
    strictEqual(runningSignBit(items(ITEMS), null, seed), runningSignBit(items(ITEMS), ones, seed));
  }
});
