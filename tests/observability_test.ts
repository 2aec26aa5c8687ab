/**
 * Observability: every answer carries a request id (the client's `X-Request-Id` when
 * plausible, else a new one); each request is one JSON access-log line at its level (info,
 * warn for 4xx) naming the request id, client, method, route and status; `/metrics` has the
 * request duration histogram and `nnserve_build_info`; NNSERVE_LOG_LEVEL filters the lines
 * and a bad value stops the start with one line. Executions: queue wait and compute time
 * histograms per compilation (and device), gone when the compilation is deleted; a named
 * model's per version, gone when the version's model is removed and not before; memory bytes
 * per client; counters of known label values present at zero from the start.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { configFromEnv, StartupError } from "../server.ts";
import { addModel, metric, registerCompiled, withTestServer } from "./server_fixture.ts";

const KEYS = new Map([["key-a", "alice"]]);
const ALICE = { authorization: "Bearer key-a" };

interface AccessLine {
  time: string;
  replica: string;
  level: string;
  msg: string;
  requestId: string;
  client: string | null;
  method: string;
  route: string;
  path: string;
  status: number;
  ms: number;
}

Deno.test("answers carry a request id and each request is one JSON access-log line", async () => {
  const lines: AccessLine[] = [];
  const sink = (line: string) => lines.push(JSON.parse(line));
  await withTestServer({
    apiKeys: KEYS,
    logLevel: "info",
    logSink: sink,
    replica: "r-7",
  }, async (server) => {
    const given = await fetch(`${server.url}/v1/models`, {
      headers: { ...ALICE, "x-request-id": "trace-42.a" },
    });
    await given.body?.cancel();
    strictEqual(given.headers.get("x-request-id"), "trace-42.a", "the client's id is echoed");
    const generated = await fetch(`${server.url}/v1/models`, {
      headers: { ...ALICE, "x-request-id": "has a space" },
    });
    await generated.body?.cancel();
    const id = generated.headers.get("x-request-id")!;
    ok(/^[0-9a-f-]{36}$/.test(id), `an implausible id is replaced: ${id}`);
    const created = await server.request("POST", "/v1/models", addModel(2), ALICE);
    strictEqual(created.status, 201);
    const missing = await fetch(`${server.url}/v1/models/nope`, { headers: ALICE });
    await missing.body?.cancel();
    const anonymous = await fetch(`${server.url}/v1/models`);
    await anonymous.body?.cancel();
    strictEqual(anonymous.status, 401);

    strictEqual(lines.length, 5, JSON.stringify(lines));
    const [first, second, third, fourth, fifth] = lines;
    deepStrictEqual(
      [first.level, first.msg, first.requestId, first.client, first.method, first.route],
      ["info", "request", "trace-42.a", "alice", "GET", "/v1/models"],
    );
    strictEqual(first.replica, "r-7", "log lines name the replica");
    strictEqual(first.status, 200);
    ok(first.ms >= 0 && !Number.isNaN(Date.parse(first.time)));
    strictEqual(second.requestId, id);
    deepStrictEqual([third.method, third.route, third.status], ["POST", "/v1/models", 201]);
    deepStrictEqual(
      [fourth.level, fourth.route, fourth.path, fourth.status],
      ["warn", "/v1/models/:id", "/v1/models/nope", 404],
    );
    deepStrictEqual([fifth.level, fifth.client, fifth.status], ["warn", null, 401]);

    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    ok(
      metrics.includes(
        'nnserve_http_request_duration_seconds_count{method="GET",route="/v1/models",status="200"} 2',
      ),
      metrics,
    );
    ok(
      /nnserve_http_request_duration_seconds_bucket\{method="POST",route="\/v1\/models",status="201",le="\+Inf"\} 1/
        .test(metrics),
    );
    ok(
      /nnserve_build_info\{replica="r-7",driver="nnserve\/[^"]+",deno="[^"]+",v8="[^"]+"\} 1/
        .test(metrics),
      metrics,
    );
    strictEqual(given.headers.get("x-nnserve-replica"), "r-7", "answers name the replica");
    strictEqual((await server.request("GET", "/v1/devices", undefined, ALICE)).body.replica, "r-7");
    strictEqual((await server.request("GET", "/readyz")).body.replica, "r-7");
  });
});

Deno.test("made-up methods share one duration series, `other`; the access line keeps each", async () => {
  const lines: AccessLine[] = [];
  const sink = (line: string) => lines.push(JSON.parse(line));
  await withTestServer({ logLevel: "info", logSink: sink }, async (server) => {
    for (const method of ["FOOA", "FOOB", "FOOC", "PATCH"]) {
      const answer = await fetch(`${server.url}/v1/models`, { method });
      await answer.body?.cancel();
      strictEqual(answer.status, 404, method);
    }
    deepStrictEqual(lines.map((l) => l.method), ["FOOA", "FOOB", "FOOC", "PATCH"]);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    const series = metrics.split("\n")
      .filter((l) => l.startsWith("nnserve_http_request_duration_seconds_count"));
    deepStrictEqual(series, [
      'nnserve_http_request_duration_seconds_count{method="other",route="unmatched",status="404"} 3',
      'nnserve_http_request_duration_seconds_count{method="PATCH",route="unmatched",status="404"} 1',
    ]);
  });
});

Deno.test("NNSERVE_LOG_LEVEL filters access lines; a bad value stops the start", async () => {
  const lines: string[] = [];
  await withTestServer({ logLevel: "warn", logSink: (l) => lines.push(l) }, async (server) => {
    await (await fetch(`${server.url}/v1/models`)).body?.cancel();
    await (await fetch(`${server.url}/v1/models/nope`)).body?.cancel();
  });
  strictEqual(lines.length, 1, "only the 404 at warn");
  strictEqual(JSON.parse(lines[0]).status, 404);
  const before = Deno.env.get("NNSERVE_LOG_LEVEL");
  Deno.env.set("NNSERVE_LOG_LEVEL", "chatty");
  try {
    throws(
      () => configFromEnv(),
      (e: Error) => e instanceof StartupError && /NNSERVE_LOG_LEVEL must be one of/.test(e.message),
    );
  } finally {
    if (before === undefined) Deno.env.delete("NNSERVE_LOG_LEVEL");
    else Deno.env.set("NNSERVE_LOG_LEVEL", before);
  }
});

Deno.test("executions are timed per compilation and device; memory bytes per client; zeros declared", async () => {
  await withTestServer({ apiKeys: KEYS, inlineWork: 0 }, async (server) => {
    const zeros = [
      'nnserve_executions_total{status="NONE"}',
      'nnserve_executions_total{status="MISSED_DEADLINE_TRANSIENT"}',
      'nnserve_refusals_total{limit="queue"}',
      'nnserve_refusals_total{limit="memory_budget"}',
      'nnserve_compilation_cache_total{result="hit"}',
      "nnserve_kernel_split_calls_total",
    ];
    for (const series of zeros) strictEqual(await metric(server.url, series), 0, series);

    const id = (await registerCompiled(server, addModel(4), ALICE)).compilation;
    for (let i = 0; i < 3; i++) {
      const run = await server.request("POST", `/v1/compilations/${id}/executions`, {
        inputs: [{ data: [1, 2, 3, 4] }, { data: [1, 1, 1, 1] }],
      }, ALICE);
      strictEqual(run.status, 200, JSON.stringify(run.body));
    }
    // A model without a name: its series are the compilation's, and go with it.
    const labels = `client="alice",model="${id}",version=""`;
    strictEqual(
      await metric(
        server.url,
        `nnserve_execution_compute_seconds_count{${labels},device="cpu-reference"}`,
      ),
      3,
    );
    strictEqual(await metric(server.url, `nnserve_execution_queue_seconds_count{${labels}}`), 3);
    const computed = await metric(
      server.url,
      `nnserve_execution_compute_seconds_sum{${labels},device="cpu-reference"}`,
    );
    ok(computed! > 0 && computed! < 1, `compute seconds ${computed}`);
    strictEqual(await metric(server.url, 'nnserve_executions_total{status="NONE"}'), 3);

    const memory = await fetch(`${server.url}/v1/memories`, {
      method: "POST",
      headers: { ...ALICE, "content-type": "application/json" },
      body: JSON.stringify({ size: 1000 }),
    });
    strictEqual(memory.status, 201, await memory.text());
    strictEqual(await metric(server.url, 'nnserve_memory_bytes{client="alice"}'), 1000);

    await server.request("DELETE", `/v1/compilations/${id}`, undefined, ALICE);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    ok(!text.includes(`model="${id}"`), "a deleted compilation's series are gone");
  });
});

Deno.test("a named version's series stay while its model does, and go when it is removed", async () => {
  await withTestServer({ apiKeys: KEYS, inlineWork: 0 }, async (server) => {
    /** Registers version `version` of `m`, compiles it and runs it once. */
    const deploy = async (version: string) => {
      const ids = await registerCompiled(
        server,
        addModel(4),
        ALICE,
        `/v1/models?name=m&version=${version}`,
      );
      const run = await server.request(
        "POST",
        `/v1/compilations/${ids.compilation}/executions`,
        { inputs: [{ data: [1, 2, 3, 4] }, { data: [1, 1, 1, 1] }] },
        ALICE,
      );
      strictEqual(run.status, 200, JSON.stringify(run.body));
      return ids;
    };
    const queued = (version: string) =>
      metric(
        server.url,
        `nnserve_execution_queue_seconds_count{client="alice",model="m",version="${version}"}`,
      );
    const one = await deploy("1");
    const two = await deploy("2");
    strictEqual(await queued("1"), 1);
    strictEqual(await queued("2"), 1);

    // Deleted while its compilation lives: hidden, not removed, and its series stay.
    strictEqual(
      (await server.request("DELETE", `/v1/models/${one.model}`, undefined, ALICE)).status,
      204,
    );
    strictEqual(await queued("1"), 1, "a compilation still runs the version");
    // Its last compilation deleted: the model is removed for good, and its series with it.
    await server.request("DELETE", `/v1/compilations/${one.compilation}`, undefined, ALICE);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    ok(!text.includes('model="m",version="1"'), "a removed version's series are gone");
    strictEqual(await queued("2"), 1, "another version's stay");

    // A version's compilations go (as an unload does) and its model stays: so do its series.
    await server.request("DELETE", `/v1/compilations/${two.compilation}`, undefined, ALICE);
    strictEqual(await queued("2"), 1);
    // Deleted with no compilation left: removed at once.
    await server.request("DELETE", `/v1/models/${two.model}`, undefined, ALICE);
    strictEqual(await queued("2"), undefined);
  });
});
