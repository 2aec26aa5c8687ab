/**
 * Requests per second of raw-body HTTP endpoints (a model's input bytes up, its first output's
 * bytes down) under `connections` concurrent client loops, each awaiting its answer before
 * sending again (fetch, keep-alive).
 *
 * Servers compared are loaded in turn, round after round, after one warm-up each. A slow spell
 * of this virtual machine then falls on every server alike, where one window per server had
 * the servers' ratios move by 20% between runs (the onnxruntime-node server's own rate moved
 * from 258 to 370 requests/s within one run).
 */
import type { RawEndpoint } from "./engines.ts";

/** How long to load each endpoint, in seconds. */
export interface ThroughputBudget {
  connections: number;
  warmupSeconds: number;
  /** Seconds of each round's window. */
  seconds: number;
  /** Windows per endpoint, in turn with the others (default 1). */
  rounds?: number;
}

/** The requests answered, the rate over the measured windows, and their latencies. */
export interface Throughput {
  requests: number;
  requestsPerSecond: number;
  medianMs: number;
  p99Ms: number;
  /** The rate of each round. */
  roundRates: number[];
}

/** One window: its answers' latencies and how long it took until the last came. */
interface Window {
  latencies: number[];
  seconds: number;
}

/**
 * Loads `endpoint` with `body` for `ms`: requests start until the window ends, and it lasts
 * until the last answer (so in-flight requests are not lost). Throws on a non-2xx answer or
 * one whose length differs from `answerBytes` (when given).
 */
async function loadWindow(
  endpoint: RawEndpoint,
  body: Uint8Array<ArrayBuffer>,
  answerBytes: number | undefined,
  connections: number,
  ms: number,
): Promise<Window> {
  const latencies: number[] = [];
  const start = performance.now();
  const end = start + ms;
  const loop = async () => {
    while (performance.now() < end) {
      const sent = performance.now();
      const response = await fetch(endpoint.url, {
        method: "POST",
        headers: endpoint.headers,
        body,
      });
      if (!response.ok) {
        throw new Error(`${endpoint.url}: ${response.status} ${await response.text()}`);
      }
      const bytes = (await response.arrayBuffer()).byteLength;
      if (answerBytes !== undefined && bytes !== answerBytes) {
        throw new Error(`${endpoint.url}: ${bytes} bytes answered, ${answerBytes} expected`);
      }
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return { latencies, seconds: (performance.now() - start) / 1000 };
}

/**
 * Each endpoint's throughput: one warm-up each, then `rounds` windows each, in turn. A row
 * pools its rounds: every answer over the time of its windows.
 */
export async function throughputs(
  endpoints: readonly RawEndpoint[],
  body: Uint8Array<ArrayBuffer>,
  answerBytes: number | undefined,
  budget: ThroughputBudget,
): Promise<Throughput[]> {
  const { connections } = budget;
  for (const endpoint of endpoints) {
    await loadWindow(endpoint, body, answerBytes, connections, budget.warmupSeconds * 1000);
  }
  const windows: Window[][] = endpoints.map(() => []);
  for (let round = 0; round < (budget.rounds ?? 1); round++) {
    for (const [k, endpoint] of endpoints.entries()) {
      windows[k].push(
        await loadWindow(endpoint, body, answerBytes, connections, budget.seconds * 1000),
      );
    }
  }
  return windows.map((rounds) => {
    const latencies = rounds.flatMap((w) => w.latencies).sort((a, b) => a - b);
    const seconds = rounds.reduce((sum, w) => sum + w.seconds, 0);
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    return {
      requests: latencies.length,
      requestsPerSecond: latencies.length / seconds,
      medianMs: at(0.5),
      p99Ms: at(0.99),
      roundRates: rounds.map((w) => w.latencies.length / w.seconds),
    };
  });
}
