import { ok, strictEqual } from "node:assert/strict";
import { whileForever } from "./control_flow_models.ts";
import { addModel, metric, startTestServer } from "./server_fixture.ts";

/**
 * Two quant8 CONV_2D (1x128x128x32, 3x3x32x32): about 300 M multiply-adds on the reference
 * quantized kernel, long enough to keep a worker busy for hundreds of milliseconds.
 */
function heavyConvModel() {
  const q8 = (dimensions: number[], lifetime: string, scale: number, zeroPoint = 0) => ({
    type: "TENSOR_QUANT8_ASYMM",
    dimensions,
    scale,
    zeroPoint,
    lifetime,
  });
  const i32 = (v: number) => ({
    type: "INT32",
    dimensions: [],
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  const filter = new Uint8Array(32 * 3 * 3 * 32).fill(130);
  const bias = new Int32Array(32);
  return {
    operands: [
      q8([1, 128, 128, 32], "MODEL_INPUT", 1 / 64),
      {
        ...q8([32, 3, 3, 32], "CONSTANT_REFERENCE", 1 / 64, 128),
        value: { base64: filter.toBase64() },
      },
      {
        type: "TENSOR_INT32",
        dimensions: [32],
        scale: 1 / 4096,
        zeroPoint: 0,
        lifetime: "CONSTANT_REFERENCE",
        value: { base64: new Uint8Array(bias.buffer).toBase64() },
      },
      i32(1),
      i32(1),
      i32(1),
      i32(0),
      q8([1, 128, 128, 32], "TEMPORARY_VARIABLE", 1 / 64),
      q8([1, 128, 128, 32], "MODEL_OUTPUT", 1 / 8),
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] },
      { type: "CONV_2D", inputs: [7, 1, 2, 3, 4, 5, 6], outputs: [8] },
    ],
    inputIndexes: [0],
    outputIndexes: [8],
  };
}

/** The heavy model's input, as base64. */
const HEAVY_INPUT = new Uint8Array(128 * 128 * 32).fill(64).toBase64();

/** How long the endless execution below runs: its loop timeout. */
const LOOP_MS = 3000;

Deno.test("a long execution does not stop the server from answering other requests", async () => {
  // A WHILE that never ends runs until its loop timeout, so from whenever it starts it runs
  // LOOP_MS more, however loaded the machine is: it cannot finish before the probes below.
  const server = await startTestServer({ workers: 1, threads: 1 });
  try {
    const model = await server.request("POST", "/v1/models", whileForever());
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const sent = performance.now();
    const execution = server.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
      inputs: [{ data: [1] }],
      loopTimeoutMs: LOOP_MS,
    });
    // It runs once it holds the one kernel thread (the metrics answer meanwhile too).
    while (await metric(server.url, "nnserve_kernel_threads_free") !== 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const health = await fetch(`${server.url}/healthz`);
    strictEqual(health.status, 200);
    await health.body?.cancel();
    const devices = await server.request("GET", "/v1/devices");
    strictEqual(devices.status, 200);
    const answered = performance.now() - sent;
    const result = await execution;
    strictEqual(result.status, 504, JSON.stringify(result.body));
    ok(String(result.body.message).includes(`loop timeout of ${LOOP_MS} ms`));
    // Started after `sent`, the execution ran until at least `sent + LOOP_MS`, and it was
    // running before the probes were sent: they were answered while it ran.
    ok(answered < LOOP_MS, `the probes were answered ${answered} ms after the execution was sent`);
  } finally {
    await server.close();
  }
});

Deno.test("parallel executions of one compilation do not share buffers", async () => {
  const server = await startTestServer({ workers: 2 });
  try {
    const model = await server.request("POST", "/v1/models", addModel(64));
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const runs = Array.from({ length: 40 }, (_, k) => {
      const a = Array.from({ length: 64 }, (_, i) => i * k);
      const b = Array.from({ length: 64 }, () => k);
      return server.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
        inputs: [{ data: a }, { data: b }],
      }).then((r) => ({ k, r }));
    });
    for (const { k, r } of await Promise.all(runs)) {
      strictEqual(r.status, 200);
      const out = (r.body.outputs as { data: number[] }[])[0].data;
      ok(out.every((v, i) => v === i * k + k), `execution ${k} got another's data`);
    }
  } finally {
    await server.close();
  }
});

Deno.test("an execution over its deadline fails with MISSED_DEADLINE and the worker recovers", async () => {
  const server = await startTestServer({ workers: 1 });
  try {
    const model = await server.request("POST", "/v1/models", heavyConvModel());
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const late = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: [{ base64: HEAVY_INPUT }], deadlineMs: 1 },
    );
    strictEqual(late.status, 504);
    strictEqual(late.body.status, "MISSED_DEADLINE_TRANSIENT");
    const small = await server.request("POST", "/v1/models", addModel(2));
    const c2 = await server.request("POST", "/v1/compilations", { model: small.body.id });
    const after = await server.request("POST", `/v1/compilations/${c2.body.id}/executions`, {
      inputs: [{ data: [1, 2] }, { data: [3, 4] }],
    });
    strictEqual(after.status, 200);
  } finally {
    await server.close();
  }
});
