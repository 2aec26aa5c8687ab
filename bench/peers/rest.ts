/**
 * REST throughput of a tiny model (ADD of two float32[4]) against a Hono JSON echo of the
 * same body, both servers as processes of their own and loaded by `wrk` (64 connections,
 * one client thread), which must report no errors.
 */
import { fileURLToPath } from "node:url";
import { TINY_ADD_MODEL } from "../rest_overhead.ts";
import { postJson, spawnServer } from "../server_process.ts";
import { type Latency, measure } from "./timing.ts";

const BODY = '{"inputs":[{"data":[1,2,3,4]},{"data":[5,6,7,8]}]}';

/** Requests per second wrk measured; throws on socket errors or non-2xx answers. */
async function wrk(url: string, seconds: number): Promise<number> {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(
    script,
    `wrk.method = "POST"\nwrk.body = '${BODY}'\nwrk.headers["Content-Type"] = "application/json"\n`,
  );
  try {
    const { stdout } = await new Deno.Command("wrk", {
      args: ["-t1", "-c64", `-d${seconds}s`, "-s", script, url],
      stdout: "piped",
    }).output();
    const text = new TextDecoder().decode(stdout);
    if (/Non-2xx|Socket errors/.test(text)) throw new Error(`wrk saw errors:\n${text}`);
    return Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]);
  } finally {
    await Deno.remove(script);
  }
}

/** The Hono echo process; `url` is its root. */
export async function spawnEcho(): Promise<{ url: string; stop(): Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", fileURLToPath(new URL("./hono_echo.ts", import.meta.url))],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!/listening on/.test(seen)) seen += (await reader.read()).value ?? "";
  return {
    url: /listening on (\S+)/.exec(seen)![1],
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** Executions/s, echoes/s; undefined when wrk is not installed. */
export async function restThroughput(
  seconds: number,
): Promise<{ executions: number; echoes: number } | undefined> {
  try {
    await new Deno.Command("wrk", { args: ["--version"], stdout: "null", stderr: "null" })
      .output();
  } catch {
    return undefined;
  }
  const server = await spawnServer();
  const echo = await spawnEcho();
  try {
    const post = (path: string, body: unknown) => postJson(server.url, path, body);
    const model = await post("/v1/models", TINY_ADD_MODEL);
    const compilation = await post("/v1/compilations", { model: model.id });
    const url = `${server.url}/v1/compilations/${compilation.id}/executions`;
    await wrk(url, 1);
    const executions = await wrk(url, seconds);
    await wrk(`${echo.url}/echo`, 1);
    const echoes = await wrk(`${echo.url}/echo`, seconds);
    return { executions, echoes };
  } finally {
    await echo.stop();
    await server.stop();
  }
}

/**
 * Latency of POSTing `bytes` as application/octet-stream to a bare Hono server in a process
 * of its own, answered with `answerBytes`: what HTTP alone costs for a model's input and
 * output here, with the same fetch client as the nnserve runs.
 */
export async function uploadFloor(
  bytes: Uint8Array<ArrayBuffer>,
  answerBytes: number,
  budget: { warmup: number; runs: number; budgetMs: number },
): Promise<Latency> {
  const echo = await spawnEcho();
  try {
    return await measure(async () => {
      const response = await fetch(`${echo.url}/upload?answer=${answerBytes}`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: bytes,
      });
      await response.arrayBuffer();
    }, budget);
  } finally {
    await echo.stop();
  }
}
