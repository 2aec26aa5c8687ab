/** bench:peers' measurement in turns: every contender runs in every round, failures stay its own. */
import { deepStrictEqual, ok } from "node:assert/strict";
import { measureInTurns } from "../bench/peers/timing.ts";

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
