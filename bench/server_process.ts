/**
 * Runs nnserve as its own process (`deno run -A main.ts`, as in production) on a random
 * loopback port, so a benchmark's client and the server do not share one event loop.
 */
import { fileURLToPath } from "node:url";

/** A server process and its URL. */
export interface ServerProcess {
  url: string;
  /** Its process id (the benchmarks read its threads' CPU time). */
  pid: number;
  stop(): Promise<void>;
}

/** Starts the server with a fresh data directory and waits until it listens. */
export async function spawnServer(env: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-bench-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: fileURLToPath(new URL("../", import.meta.url)),
    env: { PORT: "0", HOST: "127.0.0.1", NNSERVE_DATA_DIR: dataDir, ...env },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`the server exited before listening:\n${seen}`);
    seen += value;
    url = /listening on (http:\/\/\S+)/.exec(seen)?.[1];
  }
  // Keep draining its output so the process never blocks on a full pipe.
  (async () => {
    while (!(await lines.read()).done) { /* discard */ }
  })();
  return {
    url,
    pid: child.pid,
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(dataDir, { recursive: true });
    },
  };
}

/** POSTs `body` as JSON to `baseUrl + path` and parses the JSON answer (benchmark set-up). */
export async function postJson(baseUrl: string, path: string, body: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return await response.json();
}
