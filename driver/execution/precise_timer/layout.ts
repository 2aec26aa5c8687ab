/**
 * The precise timer's shared control block: two int32 words (the arming generation, the
 * firings counted) and the armed delay in ms (a float64; Infinity when nothing is armed).
 */
export const GENERATION = 0;
export const FIRED = 1;
export const DELAY = 0;

/** Bytes of the block: the two words, then the delay at offset 8. */
export const CONTROL_BYTES = 16;

export function controlOf(buffer: SharedArrayBuffer) {
  return { words: new Int32Array(buffer, 0, 2), delay: new Float64Array(buffer, 8, 1) };
}
