/**
 * RANDOM_MULTINOMIAL's kernel: draws class indices from the softmax of each batch's logits,
 * as TensorFlow's multinomial op (and NNAPI's `Multinomial.cpp`) does: a float64 running sum
 * of exp(logit - max) over the finite logits, inverted with uniform doubles.
 *
 * The uniforms come from a xoshiro128** generator seeded (through SplitMix32) with the two
 * seeds of the operation, so equal seeds give equal samples; the stream is not TensorFlow's
 * Philox stream, so the samples differ from Android's, only their distribution is the same.
 */

/** A reproducible stream of uniform doubles in [0, 1) from two 32-bit seeds. */
export class SeededUniform {
  readonly #state = new Uint32Array(4);

  constructor(seed0: number, seed1: number) {
    let s = (Math.imul(seed0 | 0, 0x9e3779b9) ^ (seed1 | 0)) >>> 0;
    for (let i = 0; i < 4; i++) {
      // SplitMix32: spreads the seeds over the whole state (never all zero in practice).
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      this.#state[i] = (z ^ (z >>> 16)) >>> 0;
    }
    if (this.#state.every((v) => v === 0)) this.#state[0] = 1;
  }

  /** The next 32 random bits (xoshiro128**). */
  nextUint32(): number {
    const s = this.#state;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** A uniform double in [0, 1) with 53 random bits. */
  nextDouble(): number {
    const high = this.nextUint32() >>> 5;
    const low = this.nextUint32() >>> 6;
    return (high * 67108864 + low) / 9007199254740992;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

/**
 * Writes `samples` class indices per batch into `out` [batches, samples], drawn with
 * probability softmax(logits) from `logits` [batches, classes]; non-finite logits are never
 * drawn.
 */
export function multinomial(
  logits: Float32Array,
  dims: { batches: number; classes: number; samples: number },
  random: SeededUniform,
  out: Int32Array,
): void {
  const { batches, classes, samples } = dims;
  const cdf = new Float64Array(classes);
  for (let b = 0; b < batches; b++) {
    const row = logits.subarray(b * classes, (b + 1) * classes);
    let max = -3.4028234663852886e38;
    for (const v of row) if (Number.isFinite(v) && v > max) max = v;
    let total = 0;
    for (let j = 0; j < classes; j++) {
      if (Number.isFinite(row[j])) total += Math.exp(row[j] - max);
      cdf[j] = total;
    }
    for (let s = 0; s < samples; s++) {
      const target = random.nextDouble() * total;
      // std::upper_bound: the first class whose running sum exceeds the target.
      let lo = 0;
      let hi = classes;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (cdf[mid] > target) hi = mid;
        else lo = mid + 1;
      }
      out[b * samples + s] = lo;
    }
  }
}
