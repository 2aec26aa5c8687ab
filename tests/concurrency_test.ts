import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { addModel, startTestServer } from "./server_fixture.ts";

/** A CONV_2D heavy enough to keep a worker busy for a while (1x128x128x32, 3x3x32x32). */
function heavyConvModel() {
  const f32 = (dimensions: number[], lifetime: string, value?: { base64: string }) => ({
    type: "TENSOR_FLOAT32",
    dimensions,
    scale: 0,
    zeroPoint: 0,
    lifetime,
    ...(value ? { value } : {}),
  });
  const i32 = (v: number) => ({
    type: "INT32",
    dimensions: [],
    scale: 0,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  const filter = new Float32Array(32 * 3 * 3 * 32).fill(0.01);
  const bias = new Float32Array(32);
  const b64 = (a: Float32Array) => ({ base64: new Uint8Array(a.buffer).toBase64() });
  return {
    operands: [
      f32([1, 128, 128, 32], "MODEL_INPUT"),
      f32([32, 3, 3, 32], "CONSTANT_REFERENCE", b64(filter)),
      f32([32], "CONSTANT_REFERENCE", b64(bias)),
      i32(1),
      i32(1),
      i32(1),
      i32(0),
      f32([1, 128, 128, 32], "TEMPORARY_VARIABLE"),
      f32([1, 128, 128, 32], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] },
      { type: "CONV_2D", inputs: [7, 1, 2, 3, 4, 5, 6], outputs: [8] },
    ],
    inputIndexes: [0],
    outputIndexes: [8],
  };
}

Deno.test("a long execution does not stop the server from answering other requests", async () => {
  const server = await startTestServer({ workers: 1 });
  try {
    const model = await server.request("POST", "/v1/models", heavyConvModel());
    strictEqual(model.status, 201);
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const input = new Float32Array(128 * 128 * 32).fill(1);
    const order: string[] = [];
    const execution = server.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
      inputs: [{ base64: new Uint8Array(input.buffer).toBase64() }],
      outputEncoding: "base64",
    }).then((r) => {
      order.push("execution");
      return r;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const health = await fetch(`${server.url}/healthz`);
    order.push("healthz");
    strictEqual(health.status, 200);
    await health.body?.cancel();
    const devices = await server.request("GET", "/v1/devices");
    order.push("devices");
    strictEqual(devices.status, 200);
    const result = await execution;
    strictEqual(result.status, 200);
    deepStrictEqual(order, ["healthz", "devices", "execution"]);
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
    const input = new Float32Array(128 * 128 * 32).fill(1);
    const late = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: [{ base64: new Uint8Array(input.buffer).toBase64() }], deadlineMs: 1 },
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
