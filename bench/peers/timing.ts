/** Latency statistics of repeated runs (after a warm-up), for every peer alike. */

/** Median and 90th percentile in milliseconds. */
/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export interface Latency {
  median: number;
  p90: number;
  runs: number;
}

/** How many runs and how long: `warmup` runs and at least `warmupMs` of them first. */
export interface MeasureBudget {
  warmup: number;
  warmupMs?: number;
  runs: number;
  budgetMs: number;
  /** Turns the measured runs are split into, each contender taking its share in turn (1). */
  rounds?: number;
}

/**
 * Runs `run` `warmup` times and for at least `warmupMs` (a server's first second runs
 * slower: a model as published was measured 2.45 ms after 5 runs of warm-up and 1.45 ms
 * after 200), then runs until `runs` runs or `budgetMs` passed (at least 3).
 */
export async function measure(
  run: () => Promise<unknown> | unknown,
  options: MeasureBudget,
): Promise<Latency> {
  const [latency] = await measureInTurns([{ run: () => run() }], options);
  if (latency instanceof Error) throw latency;
  return latency;
}

/** One of the runs {@link measureInTurns} compares. */
export interface Contender {
  /** One run; `measured` says whether its time counts (warm-ups and a turn's first do not). */
  run(measured: boolean): Promise<unknown> | unknown;
}

/**
 * Measures `contenders` in turns: each warms up as {@link measure} does, then the measured
 * runs are split into `rounds` rounds in which every contender takes its share of the runs and
 * of the time in turn. This virtual machine's host moves a two-thread run by up to 1.4x for
 * tens of seconds at a time (onnxruntime's MobileNetV2 at 1.9 or 2.8 ms); measured in turns,
 * such a spell falls on every contender alike, where measured one after another it decided
 * their ratio. A contender whose run throws takes no further turns; its result is the error.
 */
export async function measureInTurns(
  contenders: Contender[],
  options: MeasureBudget,
): Promise<(Latency | Error)[]> {
  const failed: (Error | undefined)[] = contenders.map(() => undefined);
  const times: number[][] = contenders.map(() => []);
  const attempt = async (k: number, body: () => Promise<void>) => {
    if (failed[k]) return;
    try {
      await body();
    } catch (error) {
      failed[k] = error instanceof Error ? error : new Error(String(error));
    }
  };
  for (const [k, contender] of contenders.entries()) {
    await attempt(k, async () => {
      const warm = performance.now() + (options.warmupMs ?? 0);
      for (let i = 0; i < options.warmup || performance.now() < warm; i++) {
        await contender.run(false);
      }
    });
  }
  const rounds = Math.max(1, options.rounds ?? 1);
  const runsPerRound = Math.max(1, Math.ceil(options.runs / rounds));
  const leastPerRound = Math.ceil(3 / rounds);
  for (let round = 0; round < rounds; round++) {
    for (const [k, contender] of contenders.entries()) {
      await attempt(k, async () => {
        // The others' turns left its caches and threads cold: a turn's first run is not counted.
        if (rounds > 1) await contender.run(false);
        const end = performance.now() + options.budgetMs / rounds;
        for (let n = 0; n < runsPerRound && (n < leastPerRound || performance.now() < end); n++) {
          const start = performance.now();
          await contender.run(true);
          times[k].push(performance.now() - start);
        }
      });
    }
  }
  return times.map((samples, k) => failed[k] ?? latencyOf(samples));
}

/** Median and 90th percentile of `samples` (ms). */
function latencyOf(samples: number[]): Latency {
  const sorted = samples.toSorted((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p90: at(0.9), runs: sorted.length };
}
