/**
 * Graceful shutdown of the real process (`main.ts`): on SIGTERM it stops reporting ready,
 * lets an in-flight execution finish, closes an open burst with 1001 Going Away and exits 0
 * saying nothing was cut; with a short NNSERVE_SHUTDOWN_TIMEOUT it cuts a long execution at
 * the deadline, says so, and still exits 0.
 */
import { ok, strictEqual } from "node:assert/strict";
import { burstUrl } from "./burst_fixture.ts";
import { addModel, mainProcess, SLOW_INPUT_ELEMENTS, slowConvModel } from "./server_fixture.ts";

/** Starts `main.ts`; resolves with its URL once it listens, and a way to await its exit. */
async function start(dataDir: string, env: Record<string, string>) {
  const child = mainProcess(dataDir, { NNSERVE_INLINE_WORK: "0", ...env });
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  const deadline = Date.now() + 30_000;
  while (!/listening on (http:\S+)/.test(seen) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  const url = /listening on (http:\S+)/.exec(seen)?.[1];
  ok(url, `the service started: ${seen}`);
  const stderr = new Response(child.stderr).text();
  /** The exit code and all output, or undefined (the child killed) past `ms`. */
  const exited = async (ms: number) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), ms);
    let stdout = seen;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      stdout += value;
    }
    const { code, signal } = await child.status;
    clearTimeout(timer);
    return signal === "SIGKILL" ? undefined : { code, stdout, stderr: await stderr };
  };
  return { child, url, exited };
}

async function post(url: string, path: string, body: unknown) {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await response.json();
  strictEqual(response.status, 201, JSON.stringify(json));
  return json.id as string;
}

/** A compilation of the slow model on the reference CPU, and one execution request of it. */
async function slowExecution(url: string) {
  const model = await post(url, "/v1/models", slowConvModel(30));
  const compilation = await post(url, "/v1/compilations", {
    model,
    devices: ["cpu-reference"],
  });
  return () =>
    fetch(`${url}/v1/compilations/${compilation}/executions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        inputs: [{ base64: new Uint8Array(4 * SLOW_INPUT_ELEMENTS).toBase64() }],
        outputEncoding: "base64",
      }),
    });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("SIGTERM drains in-flight work, closes bursts with 1001 and exits 0", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const { child, url, exited } = await start(dataDir, {});
  try {
    const execute = await slowExecution(url);
    const adder = await post(url, "/v1/compilations", {
      model: await post(url, "/v1/models", addModel(2)),
    });
    const socket = new WebSocket(burstUrl(url, adder));
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    const closed = new Promise<number>((resolve) => socket.onclose = (e) => resolve(e.code));
    const running = execute();
    await pause(150);
    child.kill("SIGTERM");
    const response = await running;
    const body = await response.json();
    strictEqual(response.status, 200, `the in-flight execution finished: ${JSON.stringify(body)}`);
    strictEqual(await closed, 1001, "the burst closed with Going Away");
    const result = await exited(30_000);
    ok(result, "the process exited");
    strictEqual(result.code, 0, result.stderr);
    ok(/SIGTERM: draining/.test(result.stdout), result.stdout);
    ok(/stopped \(nothing cut\)/.test(result.stdout), result.stdout);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("past NNSERVE_SHUTDOWN_TIMEOUT a running execution is cut and said so; exit 0", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const { child, url, exited } = await start(dataDir, { NNSERVE_SHUTDOWN_TIMEOUT: "0.1" });
  try {
    const execute = await slowExecution(url);
    const running = execute().then((r) => r.status, () => "connection closed");
    await pause(150);
    child.kill("SIGTERM");
    const outcome = await running;
    ok(outcome !== 200, `the cut execution did not succeed: ${outcome}`);
    const result = await exited(30_000);
    ok(result, "the process exited");
    strictEqual(result.code, 0, result.stderr);
    ok(/cut 1 request\(s\) and 0 burst request\(s\)/.test(result.stdout), result.stdout);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await Deno.remove(dataDir, { recursive: true });
  }
});
