/**
 * LSH_PROJECTION kernel (NNAPI LSHProjection.cpp): each seed of the hash tensor hashes every
 * input item (seed float bytes followed by the item's bytes) with FarmHash Fingerprint64; the
 * sign of the (weighted) sum of the signed 64-bit fingerprints is one output bit.
 */
import { fingerprint64 } from "./hash_farmhash.ts";

/** NNAPI `LSHProjectionType` values. */
export const LSH_SPARSE_DEPRECATED = 1;
export const LSH_DENSE = 2;
export const LSH_SPARSE = 3;

/** The input items the seeds hash: `count` consecutive items of `itemBytes` bytes each. */
export interface LshItems {
  bytes: Uint8Array;
  count: number;
  itemBytes: number;
}

/**
 * The sign bit (1 if > 0) of sum over items of weight[i] * double(int64 fingerprint(seed,
 * item i)), accumulated in double as the reference does; a null weight counts 1.0 per item.
 */
export function runningSignBit(
  items: LshItems,
  weight: ArrayLike<number> | null,
  seed: number,
): number {
  const key = new Uint8Array(4 + items.itemBytes);
  new DataView(key.buffer).setFloat32(0, seed, true);
  let score = 0;
  for (let i = 0; i < items.count; i++) {
    const start = i * items.itemBytes;
    key.set(items.bytes.subarray(start, start + items.itemBytes), 4);
    const runningValue = Number(BigInt.asIntN(64, fingerprint64(key)));
    score += weight === null ? runningValue : weight[i] * runningValue;
  }
  return score > 0 ? 1 : 0;
}

/**
 * Projects the items with `numHash` x `numBits` seeds (row-major in `seeds`). DENSE writes one
 * bit per seed; SPARSE packs each hash function's bits (first seed most significant) into one
 * int32, SPARSE (3) adding the offset `i << numBits` of hash function i, SPARSE_DEPRECATED (1)
 * not. Arithmetic wraps as int32.
 */
export function lshProjection(
  type: number,
  seeds: ArrayLike<number>,
  numHash: number,
  numBits: number,
  items: LshItems,
  weight: ArrayLike<number> | null,
  output: Int32Array,
): void {
  let o = 0;
  for (let i = 0; i < numHash; i++) {
    let signature = 0;
    for (let j = 0; j < numBits; j++) {
      const bit = runningSignBit(items, weight, seeds[i * numBits + j]);
      if (type === LSH_DENSE) output[o++] = bit;
      else signature = (signature << 1) | bit;
    }
    if (type === LSH_SPARSE_DEPRECATED) {
      output[o++] = signature;
    } else if (type === LSH_SPARSE) {
      const offset = numBits >= 32 ? 0 : Math.imul(i, 1 << numBits);
      output[o++] = (signature + offset) | 0;
    }
  }
}
