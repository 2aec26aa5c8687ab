/**
 * The project's one seeded generator: reproducible data for tests, benchmarks and device
 * calibration (a linear congruential generator; not for anything that must be unpredictable).
 */

/** Seeded floats in [-scale/2, scale/2). */
export function seededFloats(n: number, seed: number, scale: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s >>> 8) / 2 ** 24 - 0.5) * scale;
  }
  return out;
}
