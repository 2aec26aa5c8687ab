/**
 * The database going away under a replica (cluster mode): state operations are refused with
 * RESOURCE_EXHAUSTED_TRANSIENT (503, Retry-After) within the state timeout instead of hanging
 * or failing as bugs, and the store reconnects promptly once the database is back.
 */
import { ok, strictEqual } from "node:assert/strict";
import { DriverError } from "../nnapi/errors.ts";
import { PostgresStateStore } from "../store/postgres_state.ts";
import { startPostgres } from "./postgres_fixture.ts";

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
