/** Latency statistics of repeated runs (after a warm-up), for every peer alike. */

/** Median and 90th percentile in milliseconds. */
export interface Latency {
  median: number;
  p90: number;
  runs: number;
}

/**
 * Runs `run` `warmup` times and for at least `warmupMs` (a server's first second runs
 * slower: a model as published was measured 2.45 ms after 5 runs of warm-up and 1.45 ms
 * after 200), calls `warmed`, then runs until `runs` runs or `budgetMs` passed (at least 3).
 */
export async function measure(
  run: () => Promise<unknown> | unknown,
  options: { warmup: number; warmupMs?: number; runs: number; budgetMs: number },
  warmed?: () => void,
): Promise<Latency> {
  const warm = performance.now() + (options.warmupMs ?? 0);
  for (let i = 0; i < options.warmup || performance.now() < warm; i++) await run();
  warmed?.();
  const times: number[] = [];
  const end = performance.now() + options.budgetMs;
  while (times.length < options.runs && (times.length < 3 || performance.now() < end)) {
    const start = performance.now();
    await run();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
  return { median: at(0.5), p90: at(0.9), runs: times.length };
}
