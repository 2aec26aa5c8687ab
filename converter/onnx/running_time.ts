/**
 * Timeouts on the time this thread ran, not the wall clock's: the ONNX conversion limits
 * count the time their service could act, so a conversion whose worker answered while its
 * host thread was held up (a test's synchronous work on the same event loop, a paused
 * machine) is not cut, nor its worker replaced, for the host's delay.
 */

/** How often the clock looks at the time. */
const LOOK_MS = 250;

/**
 * The most one look counts: a look that comes later than this after the one before found the
 * event loop held up, and the whole hold counts as this much.
 */
const MOST_COUNTED_MS = 2 * LOOK_MS;

/**
 * Calls `fire` once `ms` of running time has passed (never sooner than `ms` of wall time);
 * returns a function that cancels it.
 */
export function afterRunningTime(ms: number, fire: () => void): () => void {
  let counted = 0;
  let last = performance.now();
  let timer: ReturnType<typeof setTimeout>;
  const look = () => {
    const now = performance.now();
    counted += Math.min(now - last, MOST_COUNTED_MS);
    last = now;
    if (counted >= ms) fire();
    else timer = setTimeout(look, Math.min(LOOK_MS, ms - counted));
  };
  timer = setTimeout(look, Math.min(LOOK_MS, ms));
  return () => clearTimeout(timer);
}
