/**
 * Graceful shutdown of the real process (`main.ts`): on SIGTERM it stops reporting ready,
 * lets an in-flight execution finish, closes an open burst with 1001 Going Away and exits 0
 * saying nothing was cut; with a short NNSERVE_SHUTDOWN_TIMEOUT it cuts a long execution at
 * the deadline, says so, and still exits 0. A request whose body never finishes is cut at
 * the deadline too; where nothing can cut it, the process still exits soon after, naming it.
 */
import { ok, strictEqual } from "node:assert/strict";
import { burstUrl } from "./burst_fixture.ts";
import { OutputTail } from "./output_tail.ts";
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

/**
 * How long past NNSERVE_SHUTDOWN_TIMEOUT the process may take to exit, whatever is stuck
 * (`SHUTDOWN_EXIT_MARGIN_SECONDS` of server_config.ts; a few seconds).
 */
const EXIT_MARGIN_SECONDS = 5;

/**
 * Sends the head of a `POST /v1/models` whose body never comes whole, on a connection of its
 * own, and resolves once the handler reads the body (the server's `100 Continue`): the
 * request is in flight from then on, and stays so. The connection is returned to be closed.
 */
async function stuckUpload(url: string): Promise<Deno.TcpConn> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const head = "POST /v1/models HTTP/1.1\r\nHost: nnserve\r\nContent-Type: application/json\r\n" +
    "Content-Length: 100000\r\nExpect: 100-continue\r\n\r\n";
  await conn.write(new TextEncoder().encode(head));
  let answer = "";
  const buffer = new Uint8Array(1024);
  while (!answer.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) break;
    answer += new TextDecoder().decode(buffer.subarray(0, n));
  }
  ok(answer.startsWith("HTTP/1.1 100 Continue"), `the handler reads the body: ${answer}`);
  await conn.write(new TextEncoder().encode('{"operands": ['));
  return conn;
}

/**
 * Runs `main.ts` with a 1 s shutdown timeout, makes a request hang, sends SIGTERM and waits
 * (generously) for the exit: its code and output, or undefined when it had not exited.
 */
async function shutdownWithStuckUpload(env: Record<string, string>) {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const child = mainProcess(dataDir, { NNSERVE_SHUTDOWN_TIMEOUT: "1", NNSERVE_GPU: "0", ...env });
  const stdout = new OutputTail(child.stdout);
  const stderr = new OutputTail(child.stderr);
  let conn: Deno.TcpConn | undefined;
  try {
    const line = await stdout.waitFor(/listening on http:\S+/, { timeoutMs: 30_000 });
    conn = await stuckUpload(/listening on (http:\S+)/.exec(line.text)![1]);
    const signalled = performance.now();
    child.kill("SIGTERM");
    // The bound the process must keep (timeout plus margin), and generous room besides.
    const boundMs = (1 + EXIT_MARGIN_SECONDS) * 1000 + 15_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) =>
      timer = setTimeout(() => resolve("late"), boundMs)
    );
    const status = await Promise.race([child.status, late]);
    clearTimeout(timer);
    if (status === "late") return undefined;
    await Promise.all([stdout.done, stderr.done]);
    return {
      code: status.code,
      seconds: (performance.now() - signalled) / 1000,
      output: `${stdout.tail(100)}\n${stderr.tail(100)}`,
    };
  } finally {
    conn?.close();
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await child.status;
    await Promise.all([stdout.done, stderr.done]);
    await Deno.remove(dataDir, { recursive: true });
  }
}

Deno.test("SIGTERM with a request body that never finishes: cut at the timeout, exit 0", async () => {
  const result = await shutdownWithStuckUpload({});
  ok(result, "the process exited");
  strictEqual(result.code, 0, result.output);
  ok(/stopped \(.*closed the connections still open/.test(result.output), result.output);
});

Deno.test("SIGTERM when close() cannot end a request: the process exits at timeout plus margin, naming it", async () => {
  // Without the connection guard (both timeouts 0) nothing can end the stuck request, so
  // close() never finishes: main.ts's own deadline has to end the process.
  const result = await shutdownWithStuckUpload({
    NNSERVE_HEADER_TIMEOUT: "0",
    NNSERVE_IDLE_TIMEOUT: "0",
  });
  ok(result, "the process exited");
  strictEqual(result.code, 1, result.output);
  ok(
    /shutdown did not finish .*in flight at the signal: POST \/v1\/models/.test(result.output),
    result.output,
  );
  ok(result.seconds >= 1, `not before the shutdown timeout (${result.seconds} s)`);
});
