/**
 * Requests per second of a raw-body HTTP endpoint (a model's input bytes up, its first
 * output's bytes down) under `connections` concurrent client loops, each awaiting its answer
 * before sending again (fetch, keep-alive), after a warm-up of the same load.
 */
import type { RawEndpoint } from "./engines.ts";

/** How long to load an endpoint, in seconds. */
export interface ThroughputBudget {
  connections: number;
  warmupSeconds: number;
  seconds: number;
}

/** The requests answered, the rate over the measured window, and their latencies. */
export interface Throughput {
  requests: number;
  requestsPerSecond: number;
  medianMs: number;
  p99Ms: number;
}

/**
 * Loads `endpoint` with `body`: requests start until the window ends, and the rate counts
 * every answer over the time until the last one came (so in-flight requests are not lost).
 * Throws on a non-2xx answer or one whose length differs from `answerBytes` (when given).
 */
export async function throughput(
  endpoint: RawEndpoint,
  body: Uint8Array<ArrayBuffer>,
  answerBytes: number | undefined,
  budget: ThroughputBudget,
): Promise<Throughput> {
  const load = async (ms: number) => {
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
    await Promise.all(Array.from({ length: budget.connections }, loop));
    const seconds = (performance.now() - start) / 1000;
    latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    return {
      requests: latencies.length,
      requestsPerSecond: latencies.length / seconds,
      medianMs: at(0.5),
      p99Ms: at(0.99),
    };
  };
  await load(budget.warmupSeconds * 1000);
  return await load(budget.seconds * 1000);
}
