/**
 * The precise timer's thread (`mod.ts`): it sleeps on the control word until the armed delay
 * has passed (a futex wait with that timeout: no spinning, woken within microseconds), then
 * counts one firing and wakes the event loop that waits on that count.
 */
import { workerData } from "node:worker_threads";
import { controlOf, DELAY, FIRED, GENERATION } from "./layout.ts";

const { words, delay } = controlOf(workerData as SharedArrayBuffer);
let firedGeneration = -1;
for (;;) {
  const generation = Atomics.load(words, GENERATION);
  const ms = delay[DELAY];
  if (generation === firedGeneration || ms === Infinity) {
    // Nothing armed since the last firing: sleep until the next arming.
    Atomics.wait(words, GENERATION, generation);
    continue;
  }
  if (Atomics.wait(words, GENERATION, generation, ms) !== "timed-out") continue;
  firedGeneration = generation;
  Atomics.add(words, FIRED, 1);
  Atomics.notify(words, FIRED);
}
