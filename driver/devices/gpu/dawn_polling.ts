/**
 * Paces Dawn's polling. While any of its promises is pending (a readback's `mapAsync`), Dawn's
 * Node-API binding polls the device once per event-loop turn: each turn it makes a new native
 * function and hands it to `setImmediate`. Deno 2.9 registers every such function in a list of
 * all the Node-API objects it tracks and deregisters each collected one by scanning and
 * shifting that list, so the functions of a busy loop (7,874 in a 67 ms wait on llvmpipe) made
 * collections take seconds: a run of 56 gpu islands took about 5 s instead of 0.6 s, most of
 * it deregistering. Paced, a wait's polls come 50 µs apart for its first millisecond (spent
 * spinning, as the unpaced loop spent it turning; a fast readback keeps its latency), later ones
 * an eighth of the time waited so far apart (at least 1 ms, at most 8): a wait costs about 20
 * functions and a few more per doubling of its length, not one per turn.
 */

/** For this long a wait's polls come this close, the gap spent spinning. */
const EAGER = { ms: 1, gapMs: 0.05 };

/** The pace after those, as a share of the time waited so far, and its bounds. */
const PACE_SHARE = 1 / 8;
const PACE_MS = { min: 1, max: 8 };

let installed = false;

/** Whether `callback` is a native function (Dawn's), not one of JavaScript's. */
export function isNative(callback: unknown): boolean {
  return typeof callback === "function" &&
    Function.prototype.toString.call(callback).endsWith("{ [native code] }");
}

/** Replaces this thread's `setImmediate` with one that paces native callbacks (once). */
export function paceDawnPolling(): void {
  if (installed) return;
  installed = true;
  const immediate = globalThis.setImmediate;
  let waitStart = 0;
  // Dawn schedules the next poll from within a poll while anything is pending: a poll
  // scheduled from outside one starts a new wait.
  let polling = false;
  const paced = (callback: (...args: unknown[]) => void, ...args: unknown[]) => {
    if (!isNative(callback)) return immediate(callback, ...args);
    const now = performance.now();
    // The first poll of a wait comes on the next turn.
    if (!polling) waitStart = now;
    const poll = () => {
      polling = true;
      try {
        callback(...args);
      } finally {
        polling = false;
      }
    };
    if (now - waitStart < EAGER.ms) {
      const until = polling ? now + EAGER.gapMs : now;
      while (performance.now() < until) {
        // A turn of the event loop takes about 8.5 µs: polls that close made 6 times as many
        // functions (and a tiny run on llvmpipe took 400 µs on average, with spikes, not 180).
      }
      return immediate(poll);
    }
    const pace = Math.min(PACE_MS.max, Math.max(PACE_MS.min, (now - waitStart) * PACE_SHARE));
    return setTimeout(poll, pace);
  };
  globalThis.setImmediate = paced as typeof setImmediate;
}
