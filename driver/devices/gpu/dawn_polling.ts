/**
 * Paces Dawn's polling. While any of its promises is pending (a readback's `mapAsync`), Dawn's
 * Node-API binding polls the device once per event-loop turn: each turn it makes a new native
 * function and hands it to `setImmediate`. Deno 2.9 registers every such function in a list of
 * all the Node-API objects it tracks and deregisters each collected one by scanning and
 * shifting that list, so the functions of a busy loop (tens of thousands a second) made
 * collections take seconds: a run of 56 gpu islands took about 5 s instead of 0.6 s, most of
 * it deregistering. Paced, a wait's polls come on consecutive turns for its first millisecond
 * (a readback that fast keeps its latency), later ones an eighth of the time waited so far
 * apart (at least 1 ms, at most 8): a longer wait costs a few dozen functions more, not one a
 * turn, and at most an eighth more time.
 */

/** A wait's polls come on consecutive event-loop turns for this long, and at most this many. */
const EAGER = { ms: 1, polls: 64 };

/** The pace after those, as a share of the time waited so far, and its bounds. */
const PACE_SHARE = 1 / 8;
const PACE_MS = { min: 1, max: 8 };

let installed = false;

/** Whether `callback` is a native function (Dawn's), not one of JavaScript's. */
function isNative(callback: unknown): boolean {
  return typeof callback === "function" &&
    Function.prototype.toString.call(callback).endsWith("{ [native code] }");
}

/** Replaces this thread's `setImmediate` with one that paces native callbacks (once). */
export function paceDawnPolling(): void {
  if (installed) return;
  installed = true;
  const immediate = globalThis.setImmediate;
  let waitStart = 0;
  let polls = 0;
  // Dawn schedules the next poll from within a poll while anything is pending: a poll
  // scheduled from outside one starts a new wait.
  let polling = false;
  const paced = (callback: (...args: unknown[]) => void, ...args: unknown[]) => {
    if (!isNative(callback)) return immediate(callback, ...args);
    const now = performance.now();
    if (!polling) {
      waitStart = now;
      polls = 0;
    }
    const poll = () => {
      polling = true;
      try {
        callback(...args);
      } finally {
        polling = false;
      }
    };
    if (++polls <= EAGER.polls && now - waitStart < EAGER.ms) return immediate(poll);
    const pace = Math.min(PACE_MS.max, Math.max(PACE_MS.min, (now - waitStart) * PACE_SHARE));
    return setTimeout(poll, pace);
  };
  globalThis.setImmediate = paced as typeof setImmediate;
}
