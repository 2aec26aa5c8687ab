/**
 * What black-box testing found about the server around the API: one data directory per
 * process (an OS lock, released by close() and by the death of its holder), start-up failures
 * as one line (a locked or unusable data dir, a port in use, a bad variable), header-read and
 * idle timeouts on HTTP connections, a quiet log line for clients that drop mid-upload, and a
 * lower body limit for JSON than for raw bytes.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { configFromEnv, startServer } from "../server.ts";
import { burstUrl, MessageSocket, pollUntil } from "./burst_fixture.ts";
import { addModel, finishWithin, mainProcess, startTestServer } from "./server_fixture.ts";
import { addressBytes, addressKey } from "../connection_guard/sockets.ts";

const encoder = new TextEncoder();

/** Reads a child's stdout until `text` appears (bounded); the reader stays with the caller. */
async function waitForOutput(
  reader: ReadableStreamDefaultReader<string>,
  text: string,
  ms: number,
): Promise<string> {
  let seen = "";
  const deadline = Date.now() + ms;
  while (!seen.includes(text) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  return seen;
}

/** Milliseconds until the peer closes `conn` (EOF or reset), or undefined if open past `ms`. */
async function closedWithin(conn: Deno.Conn, ms: number): Promise<number | undefined> {
  const start = Date.now();
  const buffer = new Uint8Array(4096);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), ms));
  try {
    for (;;) {
      const read = await Promise.race([conn.read(buffer).catch(() => null), late]);
      if (read === "late") return undefined;
      if (read === null) return Date.now() - start;
    }
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("a second server in this process on the same data dir fails, naming the dir and pid", async () => {
  const first = await startTestServer();
  try {
    let error: unknown;
    try {
      const second = await startServer({
        hostname: "127.0.0.1",
        port: 0,
        dataDir: first.dataDir,
        workers: 1,
        verbose: false,
      });
      await second.close();
    } catch (e) {
      error = e;
    }
    ok(error instanceof Error, "the second startServer must fail");
    strictEqual(error.name, "StartupError");
    ok(!error.message.includes("\n"), `one line: ${error.message}`);
    ok(error.message.includes(first.dataDir), error.message);
    ok(error.message.includes(`pid ${Deno.pid}`), error.message);
    // The failed start left nothing behind: the first server still serves.
    strictEqual((await first.request("GET", "/v1/devices")).status, 200);
  } finally {
    await first.close();
  }
  // close() released the lock: the directory can be served again.
  const again = await startTestServer({ dataDir: first.dataDir });
  strictEqual((await again.request("GET", "/v1/devices")).status, 200);
  await again.close();
  await Deno.remove(first.dataDir, { recursive: true });
});

Deno.test("main.ts on a data dir another process serves exits non-zero with one line naming dir and pid", async () => {
  const holder = await startTestServer();
  try {
    const result = await finishWithin(mainProcess(holder.dataDir), 30_000);
    ok(result, "the second process must exit instead of serving");
    ok(result.code !== 0, `exit code ${result.code}`);
    const lines = result.stderr.trim().split("\n");
    deepStrictEqual(lines.length, 1, `exactly one line on stderr:\n${result.stderr}`);
    ok(lines[0].includes(holder.dataDir), lines[0]);
    ok(lines[0].includes(`pid ${Deno.pid}`), lines[0]);
    ok(!result.stdout.includes("listening"), result.stdout);
  } finally {
    await holder.close();
    await Deno.remove(holder.dataDir, { recursive: true });
  }
});

Deno.test("the data dir lock dies with its holder: after SIGKILL a new server starts", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const child = mainProcess(dataDir);
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    const seen = await waitForOutput(reader, "listening on", 30_000);
    ok(seen.includes("listening on"), `the holder started: ${seen}`);
    // While it lives, this process cannot take the directory; the message names the child.
    let error: unknown;
    try {
      await (await startTestServer({ dataDir })).close();
    } catch (e) {
      error = e;
    }
    ok(error instanceof Error && error.message.includes(`pid ${child.pid}`), String(error));
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await reader.cancel();
    await child.stderr.cancel();
  }
  const server = await startTestServer({ dataDir });
  try {
    strictEqual((await server.request("GET", "/v1/devices")).status, 200);
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("a start that fails after taking the lock (port in use) gives it back, with one line", async () => {
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    for (const timeouts of [{}, { headerTimeoutSeconds: 10, idleTimeoutSeconds: 30 }]) {
      let error: unknown;
      try {
        await (await startTestServer({ dataDir, port: taken.addr.port, ...timeouts })).close();
      } catch (e) {
        error = e;
      }
      ok(error instanceof Error && error.name === "StartupError", String(error));
      ok(error.message.includes(`127.0.0.1:${taken.addr.port}`), error.message);
      ok(!error.message.includes("\n"), error.message);
    }
    const server = await startTestServer({ dataDir });
    strictEqual((await server.request("GET", "/v1/devices")).status, 200);
    await server.close();
  } finally {
    taken.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("main.ts with a malformed number variable exits with one line naming it", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    for (const [name, value] of [["PORT", "80a"], ["NNSERVE_HEADER_TIMEOUT", "-1"]]) {
      const result = await finishWithin(mainProcess(dataDir, { [name]: value }), 30_000);
      ok(result && result.code !== 0, `${name}=${value} must stop the start`);
      // Dawn's own notice on a software Vulkan driver (lavapipe), printed as it opens the
      // adapter, is not the service's output.
      const lines = result.stderr.trim().split("\n").filter((l) => !DAWN_LAVAPIPE_NOTICE.test(l));
      deepStrictEqual(lines.length, 1, result.stderr);
      ok(lines[0].includes(name) && lines[0].includes(value), lines[0]);
    }
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

/** What Dawn prints (to stderr, itself) when it opens lavapipe's adapter. */
const DAWN_LAVAPIPE_NOTICE = /^Warning: maxDynamic\w+ artificially reduced from \d+ to \d+/;

Deno.test("main.ts on a data dir it cannot use exits with one line naming the path", async () => {
  const root = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    const file = `${root}/a-file`;
    await Deno.writeTextFile(file, "not a directory");
    const kvIsDirectory = `${root}/kv-is-a-directory`;
    await Deno.mkdir(`${kvIsDirectory}/nnserve.kv`, { recursive: true });
    const memoriesIsFile = `${root}/memories-is-a-file`;
    await Deno.mkdir(memoriesIsFile);
    await Deno.writeTextFile(`${memoriesIsFile}/memories`, "");
    const cases: [string, RegExp][] = [
      [file, /cannot use the data dir .*a-file/],
      [`${file}/below`, /cannot use the data dir .*a-file\/below: Not a directory/],
      [kvIsDirectory, /cannot open the KV store .*kv-is-a-directory\/nnserve.kv/],
      [memoriesIsFile, /cannot use the data dir .*memories-is-a-file.*memories/],
    ];
    for (const [dataDir, message] of cases) {
      const result = await finishWithin(mainProcess(dataDir), 30_000);
      ok(result && result.code !== 0, `${dataDir} must stop the start`);
      // Dawn's own notice on a software Vulkan driver (lavapipe), printed as it opens the
      // adapter, is not the service's output.
      const lines = result.stderr.trim().split("\n").filter((l) => !DAWN_LAVAPIPE_NOTICE.test(l));
      deepStrictEqual(lines.length, 1, result.stderr);
      ok(message.test(lines[0]), lines[0]);
      ok(!result.stdout.includes("listening"), result.stdout);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("connections that never finish their request head are closed after the header timeout", async () => {
  const server = await startTestServer({ headerTimeoutSeconds: 0.5, idleTimeoutSeconds: 30 });
  const conns: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 20; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
      conns.push(conn);
    }
    // The server still answers others meanwhile.
    const health = await fetch(`${server.url}/healthz`);
    strictEqual(health.status, 200);
    await health.body?.cancel();
    const closedAfter = await Promise.all(conns.map((conn) => closedWithin(conn, 5_000)));
    ok(closedAfter.every((ms) => ms !== undefined), `all closed: ${closedAfter}`);
  } finally {
    for (const conn of conns) conn.close();
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("a connection opened ahead of its request waits the idle timeout, then serves it", async () => {
  // As HTTP clients' pools do: connect, send nothing for longer than the header timeout.
  const server = await startTestServer({ headerTimeoutSeconds: 0.3, idleTimeoutSeconds: 30 });
  const early = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  const slow = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    await slow.write(encoder.encode("GET /healthz HTTP/1.1\r\n"));
    // The one that began its head is cut by the header timeout ...
    ok(await closedWithin(slow, 5_000) !== undefined, "the slow head was cut");
    // ... the one that sent nothing is still open well past it, and answers its request.
    await new Promise((resolve) => setTimeout(resolve, 700));
    await early.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const buffer = new Uint8Array(4096);
    const n = await early.read(buffer);
    ok(n !== null && new TextDecoder().decode(buffer.subarray(0, n)).startsWith("HTTP/1.1 200"));
  } finally {
    early.close();
    slow.close();
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("a connection that never sends anything is closed after the idle timeout", async () => {
  const server = await startTestServer({ headerTimeoutSeconds: 0.2, idleTimeoutSeconds: 0.6 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    const started = Date.now();
    ok(await closedWithin(conn, 10_000) !== undefined, "the silent connection was closed");
    // Timers fire late under load, never early: not before the idle timeout.
    ok(Date.now() - started >= 550, `closed after ${Date.now() - started} ms`);
  } finally {
    conn.close();
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("with the shipped defaults, slowloris sockets are cut within 8 s", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  // The configuration main.ts builds from an environment that sets no timeouts.
  const server = await startServer({
    ...configFromEnv(),
    hostname: "127.0.0.1",
    port: 0,
    dataDir,
    verbose: false,
  });
  const conns: Deno.Conn[] = [];
  try {
    for (let i = 0; i < 20; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
      await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: x\r\n"));
      conns.push(conn);
    }
    const closedAfter = await Promise.all(conns.map((conn) => closedWithin(conn, 8_000)));
    ok(closedAfter.every((ms) => ms !== undefined), `all closed within 8 s: ${closedAfter}`);
  } finally {
    for (const conn of conns) conn.close();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("an idle kept-alive connection is closed after the idle timeout, not before its request", async () => {
  const server = await startTestServer({ headerTimeoutSeconds: 30, idleTimeoutSeconds: 0.5 });
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    // A silent new connection is not cut by the (short) idle timeout: the header timeout is 30 s.
    await new Promise((resolve) => setTimeout(resolve, 800));
    await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    ok(n !== null && new TextDecoder().decode(buffer.subarray(0, n)).startsWith("HTTP/1.1 200"));
    // Kept alive, then idle: closed.
    ok(await closedWithin(conn, 5_000) !== undefined, "the idle connection was closed");
  } finally {
    conn.close();
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("the guard matches each request to its connection on IPv4, IPv6 and dual-stack listeners", async () => {
  // A request the guard could not match would leave its connection looking like a slow head:
  // cut 0.2 s after its first bytes, while here it keeps serving a request every 100 ms for a
  // second (the idle timeout, 2 s, leaves room for a slow machine between requests).
  for (
    const [hostname, connectTo] of [["127.0.0.1", "127.0.0.1"], ["::1", "::1"], ["::", "127.0.0.1"]]
  ) {
    const server = await startTestServer({
      hostname,
      headerTimeoutSeconds: 0.2,
      idleTimeoutSeconds: 2,
    });
    const conn = await Deno.connect({ hostname: connectTo, port: server.port });
    try {
      const buffer = new Uint8Array(4096);
      for (let i = 0; i < 10; i++) {
        await conn.write(encoder.encode("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
        const n = await conn.read(buffer);
        ok(
          n !== null && new TextDecoder().decode(buffer.subarray(0, n)).startsWith("HTTP/1.1 200"),
          `${hostname}: request ${i} answered`,
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      // Then idle: cut by the idle timeout.
      ok(
        await closedWithin(conn, 10_000) !== undefined,
        `${hostname}: the idle connection was closed`,
      );
    } finally {
      conn.close();
      await server.close();
      await Deno.remove(server.dataDir, { recursive: true });
    }
  }
});

Deno.test("client addresses key alike from Deno's text and from socket bytes", () => {
  const key = (hostname: string) => addressKey(addressBytes(hostname));
  strictEqual(key("127.0.0.1"), "127.0.0.1");
  strictEqual(key("::ffff:127.0.0.1"), "127.0.0.1"); // IPv4-mapped, as a dual-stack listener sees IPv4
  strictEqual(key("::1"), addressKey([...new Array(15).fill(0), 1]));
  strictEqual(key("fe80::1%eth0"), addressKey([0xfe, 0x80, ...new Array(13).fill(0), 1]));
  strictEqual(
    key("2001:db8::8:800:200c:417a"),
    addressKey([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 8, 8, 0, 0x20, 0x0c, 0x41, 0x7a]),
  );
});

Deno.test("a burst WebSocket outlives the HTTP idle timeout", async () => {
  const server = await startTestServer({ headerTimeoutSeconds: 0.3, idleTimeoutSeconds: 0.3 });
  try {
    const model = await server.request("POST", "/v1/models", addModel(2));
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const memory = await server.request("POST", "/v1/memories", { size: 8 });
    const { socket } = await MessageSocket.open(burstUrl(server.url, `${compilation.body.id}`));
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    socket.sendControl({ type: "map", slot: 0, memory: memory.body.id });
    deepStrictEqual(await socket.control(), { type: "mapped", slot: 0, size: 8 });
    await socket.close();
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

/** Runs `fn` with console.log/warn/error captured as one string per call. */
async function captureConsole(fn: (lines: string[]) => Promise<void>): Promise<string[]> {
  const lines: string[] = [];
  const saved = { log: console.log, warn: console.warn, error: console.error };
  const capture = (...args: unknown[]) => {
    lines.push(args.map((a) => a instanceof Error ? `${a.stack}` : String(a)).join(" "));
  };
  console.log = console.warn = console.error = capture;
  try {
    await fn(lines);
  } finally {
    Object.assign(console, saved);
  }
  return lines;
}

Deno.test("clients that drop mid-upload are logged as one quiet line each, not as internal errors", async () => {
  // Through the connection guard, as main.ts serves.
  const server = await startTestServer({ headerTimeoutSeconds: 10, idleTimeoutSeconds: 30 });
  const drops = 20;
  try {
    const lines = await captureConsole(async (lines) => {
      for (let i = 0; i < drops; i++) {
        const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
        const [path, type] = i % 2 === 0
          ? ["/v1/memories", "application/octet-stream"]
          : ["/v1/models", "application/json"];
        await conn.write(encoder.encode(
          `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\n` +
            `Content-Length: 10000000\r\n\r\n`,
        ));
        await conn.write(new Uint8Array(1000).fill(0x20));
        await new Promise((resolve) => setTimeout(resolve, 20));
        conn.close();
      }
      // A cut-short upload of raw bytes leaves one line; a cut-short JSON body may end as
      // malformed JSON (400) without any.
      await pollUntil(() => Promise.resolve(lines.length), (n) => n >= drops / 2, {
        attempts: 100,
      });
      // Anything later would be a second line for some drop.
      await new Promise((resolve) => setTimeout(resolve, 300));
    });
    ok(lines.every((l) => !/unexpected error/i.test(l)), lines.join("\n---\n"));
    ok(lines.every((l) => !l.includes("\n")), `one line each:\n${lines.join("\n---\n")}`);
    ok(lines.length <= drops, `at most one line per drop, got ${lines.length}`);
    // The server is fine afterwards.
    strictEqual((await server.request("GET", "/v1/devices")).status, 200);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("JSON bodies past maxJsonBytes get 413 naming the limit; raw bytes keep their own limit", async () => {
  const server = await startTestServer({ maxJsonBytes: 1000, maxBodyBytes: 100_000 });
  try {
    const padded = { ...addModel(2), name: "x".repeat(2000) };
    const tooBig = await server.request("POST", "/v1/models", padded);
    strictEqual(tooBig.status, 413);
    strictEqual(tooBig.body.status, "RESOURCE_EXHAUSTED_PERSISTENT");
    ok(String(tooBig.body.message).includes("1000"), String(tooBig.body.message));
    // The same without Content-Length (chunked) is refused as well.
    const chunked = await fetch(`${server.url}/v1/models`, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: ReadableStream.from([encoder.encode(JSON.stringify(padded))]),
    });
    strictEqual(chunked.status, 413);
    strictEqual((await chunked.json()).status, "RESOURCE_EXHAUSTED_PERSISTENT");
    // A small JSON body is fine, and octet-stream bodies past the JSON limit still pass.
    strictEqual((await server.request("POST", "/v1/models", addModel(2))).status, 201);
    const bytes = await fetch(`${server.url}/v1/memories`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array(50_000),
    });
    strictEqual(bytes.status, 201);
    await bytes.body?.cancel();
    const huge = await fetch(`${server.url}/v1/memories`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array(200_000),
    });
    strictEqual(huge.status, 413);
    ok(String((await huge.json()).message).includes("100000"));
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});
