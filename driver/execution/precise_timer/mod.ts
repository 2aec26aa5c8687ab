/**
 * A timer precise to about 0.1 ms, for waits shorter than Deno's timers can keep. Those fire
 * 1-2 ms late: a 2 ms timeout answers after 2-3 ms, one of 0.1 ms after 1-2 ms. That is more
 * than a batch's whole queue delay (`maxQueueDelayUs`) may be.
 *
 * How it works:
 * - One worker per process, unref'd, so it never holds the process open. Starting it holds the
 *   event loop for 10-30 ms once, so its users start it when they are set up
 *   (`startPreciseTimer`), not at their first wait.
 * - The worker sleeps on a futex with the remaining time as its timeout.
 * - The event loop wakes on the worker's count of firings (`Atomics.waitAsync`). Nothing
 *   spins, and the wait costs the event loop's thread nothing.
 * - Each pending call also has a plain timer a few ms after it is due. That timer holds the
 *   event loop open while the call waits, and stands in should the worker fail. Where the
 *   worker cannot start, or once it has failed, the plain timers alone serve, set for the
 *   call's own time.
 */
import { Worker } from "node:worker_threads";
import { CONTROL_BYTES, controlOf, DELAY, FIRED, GENERATION } from "./layout.ts";

/** How long after its time a pending call's plain stand-in timer fires (ms). */
const STAND_IN_MS = 5;

interface Pending {
  at: number;
  callback: () => void;
  standIn: ReturnType<typeof setTimeout>;
}

type Control = ReturnType<typeof controlOf>;

let control: Control | undefined;
/** Whether the worker started and has not failed. */
let workerRuns = false;
const pending = new Set<Pending>();
/** The time the worker is armed for (Infinity: not armed). */
let armedAt = Infinity;
let watching = false;

/** Calls `callback` at `at`, a `performance.now()` time. Returns its cancel. */
export function callAt(at: number, callback: () => void): () => void {
  const entry: Pending = {
    at,
    callback,
    standIn: setTimeout(
      () => fire(entry),
      Math.max(0, at - performance.now()) + (workerRuns ? STAND_IN_MS : 0),
    ),
  };
  pending.add(entry);
  if (at < armedAt) arm(at);
  return () => {
    if (pending.delete(entry)) clearTimeout(entry.standIn);
  };
}

function fire(entry: Pending): void {
  if (!pending.delete(entry)) return;
  clearTimeout(entry.standIn);
  entry.callback();
}

/** Starts the timer's worker, if it has not started yet. */
export function startPreciseTimer(): void {
  started();
}

function started(): Control {
  if (!control) {
    const buffer = new SharedArrayBuffer(CONTROL_BYTES);
    control = controlOf(buffer);
    control.delay[DELAY] = Infinity;
    try {
      const worker = new Worker(new URL("./worker.ts", import.meta.url), { workerData: buffer });
      worker.on("error", () => workerRuns = false);
      worker.unref();
      workerRuns = true;
    } catch {
      // The plain timers serve (`callAt`).
    }
  }
  return control;
}

/** Arms the worker to fire at `at`, and waits for its firing. */
function arm(at: number): void {
  const { words, delay } = started();
  armedAt = at;
  delay[DELAY] = Math.max(0, at - performance.now());
  Atomics.add(words, GENERATION, 1);
  Atomics.notify(words, GENERATION);
  if (watching) return;
  watching = true;
  const wait = Atomics.waitAsync(words, FIRED, Atomics.load(words, FIRED));
  if (wait.async) wait.value.then(fired);
  else fired();
}

/** The worker fired: every call now due runs, in time order, and the worker is armed for the next. */
function fired(): void {
  watching = false;
  armedAt = Infinity;
  const now = performance.now();
  const due = [...pending].filter((entry) => entry.at <= now).sort((a, b) => a.at - b.at);
  for (const entry of due) fire(entry);
  // Over what is pending now: a callback may have asked for another call (and armed it).
  let next = Infinity;
  for (const entry of pending) next = Math.min(next, entry.at);
  if (next < armedAt) arm(next);
}
