/**
 * Requests per second of raw-body HTTP endpoints (a model's input bytes up, its first output's
 * bytes down) under `connections` concurrent clients, each sending its next request once its
 * answer is in (keep-alive): wrk where it is installed (`wrk.ts`: the client's own CPU then
 * takes next to nothing of the machine), else client loops of fetch.
 *
 * Servers compared are loaded in turn, round after round, after one warm-up each. A slow spell
 * of this virtual machine then falls on every server alike, where one window per server had
 * the servers' ratios move by 20% between runs (the onnxruntime-node server's own rate moved
 * from 258 to 370 requests/s within one run). Where an endpoint names its process, the CPU
 * its threads spent over its windows is read from `/proc` (Linux): per request in all, and
 * of its serving thread (the process's first).
 */
import type { RawEndpoint } from "./engines.ts";
import { runWrk, wrkInstalled } from "./wrk.ts";
import { median } from "./timing.ts";

/** How long to load each endpoint, in seconds. */
export interface ThroughputBudget {
  connections: number;
  warmupSeconds: number;
  /** Seconds of each round's window. */
  seconds: number;
  /** Windows per endpoint, in turn with the others (default 1). */
  rounds?: number;
}

/** CPU a server's threads spent per request (ms), where its endpoint names its process. */
export interface ServerCpu {
  /** Every thread of the process. */
  total: number;
  /** Its first thread: the one serving HTTP (nnserve's event loop; a peer's everything). */
  serving: number;
}

/** The requests answered, the rate over the measured windows, and their latencies. */
export interface Throughput {
  requests: number;
  requestsPerSecond: number;
  /**
   * The median latency: of every answer (fetch), or the median of the rounds' medians (wrk
   * reports percentiles, not answers).
   */
  medianMs: number;
  /** The 99th percentile: of every answer (fetch), or the largest of the rounds' (wrk). */
  p99Ms: number;
  /** The rate of each round. */
  roundRates: number[];
  cpu?: ServerCpu;
}

/** One window: its answers, how long it took until the last came, and their latencies. */
interface Window {
  requests: number;
  seconds: number;
  /** Every answer's latency (fetch). */
  latencies?: number[];
  /** The window's percentiles (wrk). */
  medianMs?: number;
  p99Ms?: number;
  /** CPU ms the server's threads spent over the window, in all and on its serving thread. */
  cpu?: ServerCpu;
}

/** CPU ms the threads of process `pid` have spent: in all, and its first thread's. */
function processCpuMs(pid: number): ServerCpu {
  let total = 0;
  let serving = 0;
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/stat`);
    } catch {
      continue; // a thread that ended meanwhile
    }
    // After the command's name (in parentheses, which may hold spaces): utime and stime
    // are the 12th and 13th fields, in clock ticks (10 ms on Linux).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ms = (Number(fields[11]) + Number(fields[12])) * 10;
    total += ms;
    if (task.name === String(pid)) serving = ms;
  }
  return { total, serving };
}

/**
 * Loads `endpoint` with `body` for `ms` through client loops of fetch: requests start until
 * the window ends, and it lasts until the last answer (so in-flight requests are not lost).
 * Throws on a non-2xx answer or one whose length differs from `answerBytes` (when given).
 */
async function fetchWindow(
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
      await answer(endpoint, body, answerBytes);
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  return { requests: latencies.length, latencies, seconds: (performance.now() - start) / 1000 };
}

/** One request to `endpoint`; throws on a non-2xx answer or one of another length. */
async function answer(
  endpoint: RawEndpoint,
  body: Uint8Array<ArrayBuffer>,
  answerBytes: number | undefined,
): Promise<void> {
  const response = await fetch(endpoint.url, { method: "POST", headers: endpoint.headers, body });
  if (!response.ok) {
    throw new Error(`${endpoint.url}: ${response.status} ${await response.text()}`);
  }
  const bytes = (await response.arrayBuffer()).byteLength;
  if (answerBytes !== undefined && bytes !== answerBytes) {
    throw new Error(`${endpoint.url}: ${bytes} bytes answered, ${answerBytes} expected`);
  }
}

/** One window of `endpoint`, by wrk or fetch, with its server's CPU where it is known. */
async function loadWindow(
  endpoint: RawEndpoint,
  body: Uint8Array<ArrayBuffer>,
  answerBytes: number | undefined,
  connections: number,
  seconds: number,
  wrk: boolean,
): Promise<Window> {
  const before = endpoint.pid === undefined ? undefined : processCpuMs(endpoint.pid);
  const window = wrk
    ? await runWrk({ url: endpoint.url, connections, seconds, headers: endpoint.headers, body })
    : await fetchWindow(endpoint, body, answerBytes, connections, seconds * 1000);
  if (before === undefined) return window;
  const after = processCpuMs(endpoint.pid!);
  return {
    ...window,
    cpu: { total: after.total - before.total, serving: after.serving - before.serving },
  };
}

/** The client `throughputs` loads with here: wrk where it is installed, else fetch. */
export async function loadClient(): Promise<"wrk" | "fetch"> {
  return await wrkInstalled() ? "wrk" : "fetch";
}

/**
 * Each endpoint's throughput: one warm-up each, then `rounds` windows each, in turn. A row
 * pools its rounds: every answer over the time of its windows. wrk checks no answer's length:
 * each endpoint's is checked once before its warm-up.
 */
export async function throughputs(
  endpoints: readonly RawEndpoint[],
  body: Uint8Array<ArrayBuffer>,
  answerBytes: number | undefined,
  budget: ThroughputBudget,
): Promise<Throughput[]> {
  const { connections } = budget;
  const wrk = await loadClient() === "wrk";
  for (const endpoint of endpoints) {
    await answer(endpoint, body, answerBytes);
    await loadWindow(endpoint, body, answerBytes, connections, budget.warmupSeconds, wrk);
  }
  const windows: Window[][] = endpoints.map(() => []);
  for (let round = 0; round < (budget.rounds ?? 1); round++) {
    for (const [k, endpoint] of endpoints.entries()) {
      windows[k].push(
        await loadWindow(endpoint, body, answerBytes, connections, budget.seconds, wrk),
      );
    }
  }
  return windows.map((rounds) => {
    const requests = rounds.reduce((sum, w) => sum + w.requests, 0);
    const seconds = rounds.reduce((sum, w) => sum + w.seconds, 0);
    const latencies = rounds.flatMap((w) => w.latencies ?? []).sort((a, b) => a - b);
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    const cpu = rounds.every((w) => w.cpu)
      ? {
        total: rounds.reduce((sum, w) => sum + w.cpu!.total, 0) / requests,
        serving: rounds.reduce((sum, w) => sum + w.cpu!.serving, 0) / requests,
      }
      : undefined;
    return {
      requests,
      requestsPerSecond: requests / seconds,
      medianMs: wrk ? median(rounds.map((w) => w.medianMs!)) : at(0.5),
      p99Ms: wrk ? Math.max(...rounds.map((w) => w.p99Ms!)) : at(0.99),
      roundRates: rounds.map((w) => w.requests / w.seconds),
      ...(cpu ? { cpu } : {}),
    };
  });
}
