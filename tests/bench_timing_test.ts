/**
 * Benchmark measurement: bench:peers' turns (every contender runs in every round, failures stay
 * its own) and the thread wake-up check.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { measureInTurns } from "../bench/peers/timing.ts";
import { measureThreadWakeup, threadWakeupText } from "../bench/thread_wakeup.ts";

Deno.test("contenders take turns: each round runs each one, a failing one drops out alone", async () => {
  const calls: string[] = [];
  let bRuns = 0;
  let aMeasured = 0;
  const results = await measureInTurns([
    {
      run: (measured) => {
        calls.push(measured ? "A" : "a");
        if (measured) aMeasured++;
      },
    },
    {
      run: () => {
        calls.push("b");
        if (++bRuns === 6) throw new Error("b stopped answering");
      },
    },
    { run: () => void calls.push("c") },
  ], { warmup: 1, runs: 6, budgetMs: 60_000, rounds: 3 });

  // Warm-ups in order, then per round: one uncounted run and two measured runs each (a's
  // measured runs in capitals).
  deepStrictEqual(calls.slice(0, 3), ["a", "b", "c"]);
  deepStrictEqual(calls.slice(3), [
    ..."aAAbbbccc", // round 1
    ..."aAAbb", // round 2: b's second call of the round (its sixth in all) throws ...
    ..."ccc",
    ..."aAAccc", // ... and it takes no further turns
  ]);
  const [a, b, c] = results;
  ok(!(a instanceof Error) && a.runs === 6 && aMeasured === 6);
  ok(b instanceof Error && b.message === "b stopped answering");
  ok(!(c instanceof Error) && c.runs === 6);
});

Deno.test("the thread wake-up check answers a round trip for back to back and each idle wait", async () => {
  const wakeup = await measureThreadWakeup([1, 3], 5);
  ok(wakeup.backToBackUs > 0);
  deepStrictEqual([...wakeup.afterIdleUs.keys()], [1, 3]);
  for (const us of wakeup.afterIdleUs.values()) ok(us > 0 && Number.isFinite(us));
  const text = threadWakeupText(wakeup);
  ok(text.includes("after 1 ms idle") && text.includes("after 3 ms idle"), text);
});
