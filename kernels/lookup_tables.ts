/**
 * EMBEDDING_LOOKUP and HASHTABLE_LOOKUP kernels (NNAPI EmbeddingLookup.cpp,
 * HashtableLookup.cpp): row gathers over a value tensor whose dim 0 enumerates the rows.
 */
import type { Numbers } from "./typed_arrays.ts";

function copyRow(
  from: ArrayLike<number>,
  fromRow: number,
  to: Numbers,
  toRow: number,
  rowSize: number,
): void {
  const source = fromRow * rowSize;
  const target = toRow * rowSize;
  for (let k = 0; k < rowSize; k++) to[target + k] = from[source + k];
}

/**
 * Copies row `lookups[i]` of `values` (`rows` rows of `rowSize` elements) to row i of `output`.
 * Returns the position of the first out-of-range lookup (nothing is written from there on),
 * or -1 when every lookup was in range.
 */
export function embeddingLookup(
  lookups: Int32Array,
  values: ArrayLike<number>,
  rows: number,
  rowSize: number,
  output: Numbers,
): number {
  for (let i = 0; i < lookups.length; i++) {
    const row = lookups[i];
    if (row < 0 || row >= rows) return i;
    copyRow(values, row, output, i, rowSize);
  }
  return -1;
}

/**
 * Bionic's (OpenBSD) `bsearch` over the first `count` keys, as the reference calls it: the
 * index of a key equal to `key`, or -1. Keys compare as int32 values (the reference's
 * comparator `*a - *b` could overflow for keys more than 2^31 apart; this does not).
 */
export function searchKey(keys: Int32Array, count: number, key: number): number {
  let base = 0;
  for (let lim = count; lim !== 0; lim >>= 1) {
    const p = base + (lim >> 1);
    const cmp = key - keys[p];
    if (cmp === 0) return p;
    if (cmp > 0) {
      base = p + 1;
      lim--;
    }
  }
  return -1;
}

/**
 * For each lookup, finds its key among the first `rows` keys (sorted ascending, one per
 * value row) and copies that value row to the output with hit 1, or zeroes the row with
 * hit 0.
 */
export function hashtableLookup(
  lookups: Int32Array,
  keys: Int32Array,
  values: ArrayLike<number>,
  rows: number,
  rowSize: number,
  output: Numbers,
  hits: Numbers,
): void {
  const count = Math.min(rows, keys.length);
  for (let i = 0; i < lookups.length; i++) {
    const row = searchKey(keys, count, lookups[i]);
    if (row < 0) {
      for (let k = i * rowSize; k < (i + 1) * rowSize; k++) output[k] = 0;
      hits[i] = 0;
    } else {
      copyRow(values, row, output, i, rowSize);
      hits[i] = 1;
    }
  }
}
