/**
 * `wrk` as the benchmarks' load generator: one client thread in C driving many keep-alive
 * connections, each sending its next request once its answer is in. A client written in
 * Deno (fetch) spent 0.2-0.3 ms of this 2-core machine's CPU per request of the PP-OCR
 * classifier (0.11 MB up), a fifth of what the servers had; wrk spends a few microseconds,
 * so that the rows measure the servers rather than their client.
 */

/** One wrk run: `connections` connections for `seconds`, every request alike. */
export interface WrkLoad {
  url: string;
  connections: number;
  /** Whole seconds (wrk takes no fractions): a fraction is rounded up. */
  seconds: number;
  headers?: Record<string, string>;
  /** The request body (a POST); none makes a GET. */
  body?: Uint8Array | string;
}

/** What wrk reported: answers, their rate, and latency percentiles in milliseconds. */
export interface WrkResult {
  requests: number;
  requestsPerSecond: number;
  /** The time wrk measured over, in seconds. */
  seconds: number;
  medianMs: number;
  p99Ms: number;
}

/** Whether wrk is installed here (it is not on the GPU machine's pack). */
export async function wrkInstalled(): Promise<boolean> {
  try {
    await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
    return true;
  } catch {
    return false;
  }
}

/** A Lua string literal of `text` (headers and paths: no bytes to escape but these). */
function luaString(text: string): string {
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/** A wrk latency such as `987.00us`, `10.45ms` or `1.02s`, in milliseconds. */
export function wrkMs(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) throw new Error(`wrk latency not understood: ${text}`);
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as "us" | "ms" | "s" | "m"];
  return Number(match[1]) * scale;
}

/**
 * Runs wrk with `load`; throws when it saw socket errors or answers other than 2xx. The body
 * reaches wrk through a file, read as bytes (a model's raw float32 input is not text).
 */
export async function runWrk(load: WrkLoad): Promise<WrkResult> {
  const dir = await Deno.makeTempDir({ prefix: "nnserve-bench-wrk-" });
  try {
    const lines: string[] = [];
    if (load.body !== undefined) {
      const bodyPath = `${dir}/body`;
      await Deno.writeFile(
        bodyPath,
        typeof load.body === "string" ? new TextEncoder().encode(load.body) : load.body,
      );
      lines.push(
        'wrk.method = "POST"',
        `local file = assert(io.open(${luaString(bodyPath)}, "rb"))`,
        'wrk.body = file:read("*a")',
        "file:close()",
      );
    }
    for (const [name, value] of Object.entries(load.headers ?? {})) {
      lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`);
    }
    const script = `${dir}/load.lua`;
    await Deno.writeTextFile(script, lines.join("\n") + "\n");
    const { stdout, success } = await new Deno.Command("wrk", {
      args: [
        "-t1",
        `-c${load.connections}`,
        `-d${Math.max(1, Math.ceil(load.seconds))}s`,
        "--latency",
        "-s",
        script,
        load.url,
      ],
      stdout: "piped",
    }).output();
    const text = new TextDecoder().decode(stdout);
    if (!success || /Non-2xx|Socket errors/.test(text)) {
      throw new Error(`wrk saw errors against ${load.url}:\n${text}`);
    }
    const answered = /(\d+) requests in ([\d.]+)(us|ms|s|m),/.exec(text);
    const rate = /Requests\/sec:\s+([\d.]+)/.exec(text);
    const p50 = /^\s+50%\s+(\S+)$/m.exec(text);
    const p99 = /^\s+99%\s+(\S+)$/m.exec(text);
    if (!answered || !rate || !p50 || !p99) throw new Error(`wrk output not understood:\n${text}`);
    return {
      requests: Number(answered[1]),
      requestsPerSecond: Number(rate[1]),
      seconds: wrkMs(`${answered[2]}${answered[3]}`) / 1000,
      medianMs: wrkMs(p50[1]),
      p99Ms: wrkMs(p99[1]),
    };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
