import { deepStrictEqual, ok } from "node:assert/strict";
import { callAt, startPreciseTimer } from "./mod.ts";

// Its worker's start holds the event loop once; the times below count from after it.
startPreciseTimer();

function at(ms: number, name: string, log: string[], done?: () => void) {
  const due = performance.now() + ms;
  return callAt(due, () => {
    ok(performance.now() >= due, `${name} ran ${due - performance.now()} ms early`);
    log.push(name);
    done?.();
  });
}

Deno.test("the precise timer calls each callback at its time, never before, in time order", async () => {
  const log: string[] = [];
  const { promise, resolve } = Promise.withResolvers<void>();
  // Asked for out of order: the earlier calls re-arm the worker.
  at(40, "c", log, resolve);
  at(0.2, "a", log);
  at(15, "b", log);
  await promise;
  deepStrictEqual(log, ["a", "b", "c"]);
});

Deno.test("a cancelled call never runs; a callback may ask for another call", async () => {
  const log: string[] = [];
  const { promise, resolve } = Promise.withResolvers<void>();
  const cancel = at(1, "cancelled", log);
  at(2, "first", log, () => at(0.5, "second", log, resolve));
  cancel();
  await promise;
  // Past the cancelled call's stand-in timer too.
  await new Promise((r) => setTimeout(r, 10));
  deepStrictEqual(log, ["first", "second"]);
});

Deno.test("the timer's worker fires once per arming, after the armed delay", async () => {
  const { Worker } = await import("node:worker_threads");
  const { CONTROL_BYTES, controlOf, DELAY, FIRED, GENERATION } = await import("./layout.ts");
  const buffer = new SharedArrayBuffer(CONTROL_BYTES);
  const { words, delay } = controlOf(buffer);
  delay[DELAY] = Infinity;
  const worker = new Worker(new URL("./worker.ts", import.meta.url), { workerData: buffer });
  try {
    for (const [ms, fired] of [[1, 1], [20, 2]]) {
      delay[DELAY] = ms;
      const armed = performance.now();
      Atomics.add(words, GENERATION, 1);
      Atomics.notify(words, GENERATION);
      // Blocking this thread is fine here: the worker fires on its own (10 s: a bound, not a race).
      ok(["ok", "not-equal"].includes(Atomics.wait(words, FIRED, fired - 1, 10_000)));
      ok(performance.now() - armed >= ms, `fired ${performance.now() - armed} ms after arming`);
      // Once per arming: nothing more while nothing is armed.
      await new Promise((r) => setTimeout(r, 30));
      ok(Atomics.load(words, FIRED) === fired, `fired ${Atomics.load(words, FIRED)} times`);
    }
  } finally {
    await worker.terminate();
  }
});
