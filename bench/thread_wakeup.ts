/**
 * What handing work to another thread costs on this machine: a message to a worker and its
 * answer, back to back and after the worker slept. Every execution that is not run inline
 * makes that round trip (the serving thread to an executor and back), so at one client this
 * decides much of what nnserve adds to a run; on the development VM a sleeping thread took
 * hundreds of microseconds to wake where a busy one took tens. Benchmarks print it beside
 * their tables, measured in the same run.
 */

/** Median round trips in microseconds: back to back, and after each idle wait. */
export interface ThreadWakeup {
  backToBackUs: number;
  /** Idle milliseconds before each message -> median round trip (µs). */
  afterIdleUs: Map<number, number>;
}

const WORKER_SOURCE = `self.onmessage = (event) => self.postMessage(event.data);`;

/**
 * Measures `trips` round trips for each idle wait (back to back first), taken in turns: a
 * few of each wait in every round, so that a slow spell of the machine falls on all alike.
 */
export async function measureThreadWakeup(
  idleMs: readonly number[] = [1, 10],
  trips = 60,
  rounds = 6,
): Promise<ThreadWakeup> {
  const worker = new Worker(
    `data:application/javascript,${encodeURIComponent(WORKER_SOURCE)}`,
    { type: "module" },
  );
  try {
    let answered: () => void = () => {};
    worker.onmessage = () => answered();
    const roundTrip = async () => {
      const back = new Promise<void>((resolve) => answered = resolve);
      const start = performance.now();
      worker.postMessage(0);
      await back;
      return (performance.now() - start) * 1000;
    };
    for (let i = 0; i < 10; i++) await roundTrip();
    const waits = [0, ...idleMs];
    const times: number[][] = waits.map(() => []);
    for (let round = 0; round < rounds; round++) {
      for (const [k, idle] of waits.entries()) {
        for (let i = 0; i < Math.ceil(trips / rounds); i++) {
          if (idle > 0) await new Promise((resolve) => setTimeout(resolve, idle));
          times[k].push(await roundTrip());
        }
      }
    }
    const median = (k: number) => times[k].sort((a, b) => a - b)[times[k].length >> 1];
    return {
      backToBackUs: median(0),
      afterIdleUs: new Map(idleMs.map((idle, k) => [idle, median(k + 1)])),
    };
  } finally {
    worker.terminate();
  }
}

/** One sentence for a benchmark's document. */
export function threadWakeupText(wakeup: ThreadWakeup): string {
  const idle = [...wakeup.afterIdleUs].map(([ms, us]) => `${us.toFixed(0)} µs after ${ms} ms idle`);
  return `A message to a worker thread and its answer took ${
    wakeup.backToBackUs.toFixed(0)
  } µs back to back and ${idle.join(", ")} in this run (\`bench/thread_wakeup.ts\`): every ` +
    `execution on an executor makes that round trip.`;
}

if (import.meta.main) console.log(threadWakeupText(await measureThreadWakeup()));
