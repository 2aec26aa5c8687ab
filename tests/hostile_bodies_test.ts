/**
 * Request bodies built to take the process down: a gzip bomb, a JSON body over the JSON limit
 * sent without a Content-Type, and `data` nested 100,000 levels deep. Each is refused with a
 * clear status while the process's memory stays bounded and `/healthz` keeps answering.
 */
import { ok, strictEqual } from "node:assert/strict";
import { addModel, withMainProcess } from "./server_fixture.ts";

/** Limits of the service: small, so that a modest bomb passes them many times over. */
const LIMITS = { maxJsonBytes: 4 * 1024 * 1024, maxBodyBytes: 16 * 1024 * 1024 };

/** How much the service's peak resident memory may grow while a hostile body is refused. */
const RSS_BOUND = 96 * 1024 * 1024;

/** The service's own process (its peak RSS is its alone), serving the add model as "calc". */
interface Service {
  url: string;
  pid: number;
}

/** Runs `fn` against `main.ts` in a process of its own with {@link LIMITS}, serving "calc". */
async function withService(fn: (service: Service) => Promise<void>) {
  const env = {
    NNSERVE_MAX_JSON_BYTES: String(LIMITS.maxJsonBytes),
    NNSERVE_MAX_BODY_BYTES: String(LIMITS.maxBodyBytes),
  };
  await withMainProcess({ env }, async ({ url, child }) => {
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    const registered = await post("/v1/models?name=calc&version=1", addModel(2));
    strictEqual(registered.status, 201, JSON.stringify(registered.body));
    const compiled = await post("/v1/compilations", { model: registered.body.id });
    strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
    await fn({ url, pid: child.pid });
  });
}

/** The process's peak resident memory so far (VmHWM), in bytes. */
async function peakRss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(kib[1]) * 1024;
}

/**
 * Runs `send` while polling `/healthz`: the answer, how much the service's peak RSS grew,
 * and the slowest `/healthz` answer meanwhile.
 */
async function underWatch(service: Service, send: () => Promise<Response>) {
  const before = await peakRss(service.pid);
  let done = false;
  let slowest = 0;
  const polling = (async () => {
    while (!done) {
      const started = performance.now();
      await (await fetch(`${service.url}/healthz`)).body?.cancel();
      slowest = Math.max(slowest, performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  try {
    const response = await send();
    const text = await response.text();
    return {
      status: response.status,
      text,
      growth: (await peakRss(service.pid)) - before,
      slowest,
    };
  } finally {
    done = true;
    await polling;
  }
}

/** Gzip of `bytes` zeros, compressed a MiB at a time. */
async function gzipZeros(bytes: number): Promise<Uint8Array<ArrayBuffer>> {
  const chunk = new Uint8Array(1024 * 1024);
  const zeros = new ReadableStream<BufferSource>({
    start(controller) {
      for (let sent = 0; sent < bytes; sent += chunk.byteLength) controller.enqueue(chunk);
      controller.close();
    },
  });
  return new Uint8Array(
    await new Response(zeros.pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
  );
}

Deno.test("a gzip bomb is refused with 413 before it inflates: /v2 infer, a /v1 execution, a memory", async () => {
  await withService(async (service) => {
    const bomb = await gzipZeros(512 * 1024 * 1024);
    ok(bomb.byteLength < 1024 * 1024, `the bomb is ${bomb.byteLength} bytes`);
    const bombs: [string, Record<string, string>, string][] = [
      ["/v2/models/calc/infer", {}, "NNSERVE_MAX_JSON_BYTES"],
      ["/v1/models", { "content-type": "application/json" }, "NNSERVE_MAX_JSON_BYTES"],
      ["/v1/memories", { "content-type": "application/octet-stream" }, "NNSERVE_MAX_BODY_BYTES"],
    ];
    for (const [path, headers, limit] of bombs) {
      const watched = await underWatch(service, () =>
        fetch(`${service.url}${path}`, {
          method: "POST",
          headers: { ...headers, "content-encoding": "gzip" },
          body: bomb,
        }));
      strictEqual(watched.status, 413, `${path}: ${watched.text}`);
      ok(watched.text.includes(`once inflated (${limit})`), watched.text);
      ok(watched.growth < RSS_BOUND, `${path}: RSS grew ${watched.growth} bytes`);
      ok(watched.slowest < 2000, `${path}: /healthz took up to ${watched.slowest} ms`);
    }
  });
});

Deno.test("a JSON body over the JSON limit is refused without a Content-Type too", async () => {
  await withService(async (service) => {
    const request = {
      id: "x".repeat(LIMITS.maxJsonBytes + 1024),
      inputs: [
        { name: "input0", datatype: "FP32", shape: [2], data: [1, 2] },
        { name: "input1", datatype: "FP32", shape: [2], data: [3, 4] },
      ],
    };
    const body = new TextEncoder().encode(JSON.stringify(request));
    const watched = await underWatch(
      service,
      () => fetch(`${service.url}/v2/models/calc/infer`, { method: "POST", body }),
    );
    strictEqual(watched.status, 413, watched.text.slice(0, 200));
    ok(watched.text.includes("NNSERVE_MAX_JSON_BYTES"), watched.text);
    // The same request within the limit is answered.
    const small = await fetch(`${service.url}/v2/models/calc/infer`, {
      method: "POST",
      body: JSON.stringify({ ...request, id: "small" }),
    });
    strictEqual(small.status, 200, await small.text());
  });
});

Deno.test("data nested 100,000 levels deep is a 400 naming the depth, not a crash", async () => {
  await withService(async (service) => {
    const deep = "[".repeat(100_000) + "1" + "]".repeat(100_000);
    const body = `{"inputs":[{"name":"input0","datatype":"FP32","shape":[2],"data":${deep}},` +
      `{"name":"input1","datatype":"FP32","shape":[2],"data":[3,4]}]}`;
    const response = await fetch(`${service.url}/v2/models/calc/infer`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const text = await response.text();
    strictEqual(response.status, 400, text);
    ok(text.includes("nest deeper than 64 levels"), text);
  });
});
