import { ok, strictEqual } from "node:assert/strict";
import { DriverError } from "../../../nnapi/errors.ts";
import { ExecutorPool } from "./pool.ts";
import { buildModel } from "../../model/model.ts";
import { ModelSchema } from "../../model/model_schema.ts";
import { type PreparedModel } from "../../compilation/plan.ts";
import { prepareModel } from "../../compilation/prepare.ts";

/**
 * A float32 MAX_POOL_2D whose n x n window covers the whole 1 x n x n x 1 input (SAME
 * padding, stride 1): n^4 taps, about a second on the reference kernel for n = 150.
 */
function poolPlan(n: number): PreparedModel {
  const i32 = (v: number) => ({
    type: "INT32",
    dimensions: [],
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  const json = ModelSchema.parse({
    operands: [
      { type: "TENSOR_FLOAT32", dimensions: [1, n, n, 1], lifetime: "MODEL_INPUT" },
      i32(1),
      i32(1),
      i32(1),
      i32(n),
      i32(n),
      i32(0),
      { type: "TENSOR_FLOAT32", dimensions: [1, n, n, 1], lifetime: "MODEL_OUTPUT" },
    ],
    operations: [{ type: "MAX_POOL_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  });
  return prepareModel(buildModel(json), { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" });
}

const SLOW = 150;
const slowPlan = poolPlan(SLOW);
const fastPlan = poolPlan(2);
const slowInput = () => [{ data: new Float32Array(SLOW * SLOW), shape: [1, SLOW, SLOW, 1] }];
const fastInput = () => [{ data: Float32Array.of(1, 2, 3, 4), shape: [1, 2, 2, 1] }];

/** Settles with "pending" when `promise` has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | "pending"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<"pending">((resolve) => {
    timer = setTimeout(() => resolve("pending"), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

Deno.test("a queued execution is rejected at its deadline while the worker is still busy", async () => {
  const pool = new ExecutorPool(1);
  try {
    let slowDone = false;
    const slow = pool.run("slow", slowPlan, slowInput(), { client: "test", priority: "MEDIUM" })
      .finally(() => slowDone = true);
    const queuedAt = performance.now();
    const failure = await pool.run("fast", fastPlan, fastInput(), {
      client: "test",
      priority: "MEDIUM",
      deadline: Date.now() + 100,
    }).then(() => undefined, (error: unknown) => error);
    const waited = performance.now() - queuedAt;
    ok(failure instanceof DriverError, `expected a DriverError, got ${failure}`);
    strictEqual(failure.status, "MISSED_DEADLINE_TRANSIENT");
    ok(!slowDone, "rejected only when the busy worker became free");
    ok(waited >= 90 && waited < 400, `rejected after ${waited.toFixed(0)} ms, deadline 100 ms`);
    strictEqual(pool.queued, 0);
    await slow;
  } finally {
    pool.close();
  }
});

Deno.test("the execution queued behind an expired one runs without anything new arriving", async () => {
  const pool = new ExecutorPool(1);
  try {
    const slow = pool.run("slow", slowPlan, slowInput(), { client: "test", priority: "MEDIUM" });
    const expired = pool.run("fast", fastPlan, fastInput(), {
      client: "test",
      priority: "MEDIUM",
      deadline: Date.now() + 50,
    }).then(() => "ran", (error: DriverError) => error.status);
    const behind = pool.run("fast", fastPlan, fastInput(), { client: "test", priority: "MEDIUM" });
    await slow;
    strictEqual(await expired, "MISSED_DEADLINE_TRANSIENT");
    const result = await within(behind, 3000);
    ok(result !== "pending", "the queued execution never got the free worker");
    strictEqual(Array.from(result.outputs[0].data).join(), "4,4,4,4");
  } finally {
    pool.close();
  }
});

Deno.test("an execution whose deadline passed before it was queued never takes a worker", async () => {
  const pool = new ExecutorPool(1);
  try {
    const failure = await pool.run("fast", fastPlan, fastInput(), {
      client: "test",
      priority: "MEDIUM",
      deadline: Date.now() - 1,
    }).then(() => undefined, (error: unknown) => error);
    ok(failure instanceof DriverError);
    strictEqual(failure.status, "MISSED_DEADLINE_TRANSIENT");
    const after = await pool.run("fast", fastPlan, fastInput(), {
      client: "test",
      priority: "MEDIUM",
    });
    strictEqual(Array.from(after.outputs[0].data).join(), "4,4,4,4");
  } finally {
    pool.close();
  }
});

Deno.test("an overrun execution is stopped at its deadline and replacement workers take over", async () => {
  const pool = new ExecutorPool(1);
  try {
    for (let round = 0; round < 2; round++) {
      const started = performance.now();
      const failure = await pool.run("slow", slowPlan, slowInput(), {
        client: "test",
        priority: "MEDIUM",
        deadline: Date.now() + 100,
      }).then(() => undefined, (error: unknown) => error);
      const took = performance.now() - started;
      ok(failure instanceof DriverError, `round ${round}: expected a DriverError, got ${failure}`);
      strictEqual(failure.status, "MISSED_DEADLINE_TRANSIENT");
      ok(took < 400, `round ${round}: stopped after ${took.toFixed(0)} ms, deadline 100 ms`);
      const after = await within(
        pool.run("fast", fastPlan, fastInput(), { client: "test", priority: "HIGH" }),
        5000,
      );
      ok(after !== "pending", `round ${round}: the replacement worker never answered`);
      strictEqual(Array.from(after.outputs[0].data).join(), "4,4,4,4");
    }
    // The replaced worker's execution no longer counts: its thread is free again.
    strictEqual(pool.running, 0);
    strictEqual(pool.freeThreads, 1);
  } finally {
    pool.close();
  }
});

Deno.test("executions running at once are counted while they run and their threads come back", async () => {
  const pool = new ExecutorPool(2, 4);
  try {
    const runs = [0, 1].map(() =>
      pool.run("medium", poolPlan(60), [{ data: new Float32Array(3600), shape: [1, 60, 60, 1] }], {
        client: "test",
        priority: "MEDIUM",
      })
    );
    await Promise.all(runs);
    strictEqual(pool.running, 0);
    strictEqual(pool.freeThreads, 4);
  } finally {
    pool.close();
  }
});
