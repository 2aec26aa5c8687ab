import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { embeddingLookup, hashtableLookup, searchKey } from "./lookup_tables.ts";

Deno.test("embeddingLookup() copies the looked-up rows in lookup order", () => {
  const values = new Float32Array([0, 0.5, 1, 1.5, 2, 2.5]); // 3 rows of 2
  const out = new Float32Array(6);
  strictEqual(embeddingLookup(new Int32Array([2, 0, 2]), values, 3, 2, out), -1);
  deepStrictEqual(Array.from(out), [2, 2.5, 0, 0.5, 2, 2.5]);
});

Deno.test("embeddingLookup() reports the first out-of-range lookup", () => {
  const values = new Uint8Array([1, 2, 3, 4]);
  strictEqual(embeddingLookup(new Int32Array([1, 2]), values, 2, 2, new Uint8Array(4)), 1);
  strictEqual(embeddingLookup(new Int32Array([-1]), values, 2, 2, new Uint8Array(2)), 0);
});

Deno.test("hashtableLookup() gives the CTS hashtable_lookup_float rows and hits", () => {
  const out = new Float32Array(8);
  const hits = new Uint8Array(4);
  hashtableLookup(
    new Int32Array([1234, -292, -11, 0]),
    new Int32Array([-11, 0, 1234]),
    new Float32Array([0, 0.1, 1, 1.1, 2, 2.1]),
    3,
    2,
    out,
    hits,
  );
  deepStrictEqual(Array.from(out), Array.from(new Float32Array([2, 2.1, 0, 0, 0, 0.1, 1, 1.1])));
  deepStrictEqual(Array.from(hits), [1, 0, 1, 1]);
});

Deno.test("searchKey() finds every key of a sorted table, including extreme ones", () => {
  const keys = new Int32Array([-2147483648, -5, 0, 7, 2147483647]);
  keys.forEach((key, i) => strictEqual(searchKey(keys, keys.length, key), i));
  strictEqual(searchKey(keys, keys.length, 1), -1);
  strictEqual(searchKey(keys, 0, 0), -1);
});
