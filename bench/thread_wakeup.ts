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

/** Measures `rounds` round trips for each idle wait (0 = back to back). */
export async function measureThreadWakeup(
  idleMs: readonly number[] = [1, 10],
  rounds = 60,
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
    const median = async (idle: number) => {
      const times: number[] = [];
      for (let i = 0; i < rounds; i++) {
        if (idle > 0) await new Promise((resolve) => setTimeout(resolve, idle));
        times.push(await roundTrip());
      }
      return times.sort((a, b) => a - b)[rounds >> 1];
    };
    const backToBackUs = await median(0);
    const afterIdleUs = new Map<number, number>();
    for (const idle of idleMs) afterIdleUs.set(idle, await median(idle));
    return { backToBackUs, afterIdleUs };
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
