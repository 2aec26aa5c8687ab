/**
 * The database going away under a replica (cluster mode): state operations are refused with
 * RESOURCE_EXHAUSTED_TRANSIENT (503, Retry-After) within the state timeout instead of hanging
 * or failing as bugs, and the store reconnects promptly once the database is back.
 */
import { ok, strictEqual } from "node:assert/strict";
import { DriverError } from "../nnapi/errors.ts";
import { PostgresStateStore } from "../store/postgres_state.ts";
import { Balancer, executeVia, startReplicas, startSharedStores } from "./cluster_fixture.ts";
import { startPostgres } from "./postgres_fixture.ts";
import { addModel, type TestServer } from "./server_fixture.ts";

/** The state timeout of these tests (seconds). */
const TIMEOUT_SECONDS = 2;

/** How much later than the timeout a refusal may come on a loaded machine (ms). */
const SLACK_MS = 3000;

Deno.test("a state store whose database is away refuses within its timeout, then reconnects", async () => {
  const postgres = await startPostgres();
  try {
    const url = await postgres.database("outage");
    const store = await PostgresStateStore.open(url, { timeoutSeconds: TIMEOUT_SECONDS });
    try {
      await store.set(["k"], 1);
      ok(await store.available());
      await postgres.pause();
      for (const operation of [() => store.get(["k"]), () => store.set(["k"], 2)]) {
        const started = performance.now();
        const error = await operation().then(() => undefined, (e: unknown) => e);
        const waited = performance.now() - started;
        ok(error instanceof DriverError, `refused with a DriverError, not ${error}`);
        strictEqual(error.status, "RESOURCE_EXHAUSTED_TRANSIENT");
        strictEqual(error.details.limit, "state_store");
        ok(error.details.retryAfterSeconds! > 0);
        ok(error.message.includes("state store (PostgreSQL at 127.0.0.1:"), error.message);
        ok(waited < TIMEOUT_SECONDS * 1000 + SLACK_MS, `refused after ${waited} ms`);
      }
      ok(!await store.available());
      await postgres.resume();
      // Back within a few seconds: the reconnection delay is capped at one second.
      const back = performance.now();
      let value: unknown;
      for (let k = 0; k < 100 && value === undefined; k++) {
        value = await store.get<number>(["k"]).then((e) => e.value, () => undefined);
        if (value === undefined) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      strictEqual(value, 1);
      ok(performance.now() - back < 10_000, "reconnected within 10 s");
    } finally {
      await store.close();
    }
  } finally {
    await postgres.stop();
  }
});

Deno.test("through deploy/haproxy.cfg with PostgreSQL stopped: executions go on, /readyz says degraded, state requests get 503 + Retry-After, and all is back once it returns", async () => {
  await using cleanup = new AsyncDisposableStack();
  const stores = await startSharedStores("outage");
  cleanup.defer(() => stores.stop());
  const replicas = await startReplicas(stores, ["r1", "r2", "r3"], cleanup, {
    stateTimeoutSeconds: TIMEOUT_SECONDS,
  });
  const balancer = await Balancer.start(replicas.map((r) => `127.0.0.1:${r.port}`));
  cleanup.defer(() => balancer.stop());
  const lb = balancer.url;
  const post = (path: string, body: unknown) =>
    fetch(`${lb}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const model = await (await post("/v1/models", addModel(2))).json();
  const compiled = await (await post("/v1/compilations", { model: model.id })).json();
  const inputs = { inputs: [{ data: [1, 2] }, { data: [3, 4] }] };
  const first = await executeVia(lb, compiled.id, inputs);
  strictEqual(first.status, 200, JSON.stringify(first.body));
  const owner = replicas.find((r) => r.driver.replica === first.replica)!;

  await stores.postgres.pause();
  // A state request: refused within the timeout, with a retry hint, not a 500.
  const started = performance.now();
  const listing = await fetch(`${lb}/v1/models`);
  const waited = performance.now() - started;
  const refusal = await listing.json();
  strictEqual(listing.status, 503, JSON.stringify(refusal));
  strictEqual(refusal.limit, "state_store");
  ok(Number(listing.headers.get("retry-after")) > 0);
  ok(waited < TIMEOUT_SECONDS * 1000 + SLACK_MS, `refused after ${waited} ms`);
  // The prepared compilation still runs, through the balancer, on its replica.
  for (let k = 0; k < 5; k++) {
    const run = await executeVia(lb, compiled.id, inputs);
    strictEqual(run.status, 200, JSON.stringify(run.body));
    strictEqual(run.replica, owner.driver.replica);
  }
  // A replica holding compilations says degraded (200: the balancer keeps sending it their
  // executions); one holding none can do nothing: 503.
  const readiness = async (replica: TestServer) => {
    const response = await fetch(`${replica.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };
  const idle = [];
  for (const replica of replicas) {
    const { liveCompilations } = await replica.driver.condition();
    // A probe's answer is kept a second: the one from before the outage may still be kept.
    let state = await readiness(replica);
    for (let k = 0; k < 50 && state.body.status === "ready"; k++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      state = await readiness(replica);
    }
    if (liveCompilations > 0) {
      strictEqual(state.status, 200, JSON.stringify(state.body));
      strictEqual(state.body.status, "degraded");
    } else {
      idle.push(replica);
      strictEqual(state.status, 503, JSON.stringify(state.body));
      ok(String(state.body.message).includes("state store is unreachable"), state.body.message);
    }
  }
  ok(idle.length > 0 && !idle.includes(owner), "one compilation: some replica holds none");

  await stores.postgres.resume();
  // Back within seconds: state requests answer again and the replicas are ready.
  let back = 0;
  for (let k = 0; k < 100 && back !== 200; k++) {
    const response = await fetch(`${lb}/v1/models`);
    await response.body?.cancel();
    back = response.status;
    if (back !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  strictEqual(back, 200, "state requests answer again within 10 s");
  for (const replica of replicas) {
    let state = await readiness(replica);
    for (let k = 0; k < 20 && state.body.status !== "ready"; k++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      state = await readiness(replica);
    }
    strictEqual(state.body.status, "ready", JSON.stringify(state.body));
  }
  strictEqual((await executeVia(lb, compiled.id, inputs)).status, 200);
});
