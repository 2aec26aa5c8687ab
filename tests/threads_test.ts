/**
 * Kernel threads through the service: with NNSERVE_THREADS=2 the executor starts its compute
 * lane at once (`nnserve_compute_lanes_ready`), and a large float convolution's calls split
 * across it from the first execution (counted in /metrics) and give the bytes a one-thread
 * server gives; concurrent executions share the budget, and every thread is free again
 * once they finish, also after an execution overran its deadline and its worker was
 * replaced.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { seededFloats } from "../kernels/seeded_random.ts";
import { metric, type TestServer, withTestServer } from "./server_fixture.ts";

/** Float32 CONV_2D 1x96x96x32 -> 64 (3x3, SAME, ReLU6) twice: about 300 M multiply-adds. */
function convolutionModel() {
  const i32 = (v: number) => ({
    type: "INT32",
    dimensions: [],
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  const f32 = (dimensions: number[], lifetime: string, values?: Float32Array) => ({
    type: "TENSOR_FLOAT32",
    dimensions,
    lifetime,
    ...(values ? { value: { base64: new Uint8Array(values.buffer).toBase64() } } : {}),
  });
  return {
    operands: [
      f32([1, 96, 96, 32], "MODEL_INPUT"),
      f32([64, 3, 3, 32], "CONSTANT_REFERENCE", seededFloats(64 * 9 * 32, 1, 0.1)),
      f32([64], "CONSTANT_REFERENCE", seededFloats(64, 2, 0.2)),
      i32(1),
      i32(1),
      i32(1),
      i32(3),
      f32([1, 96, 96, 64], "TEMPORARY_VARIABLE"),
      f32([64, 3, 3, 64], "CONSTANT_REFERENCE", seededFloats(64 * 9 * 64, 3, 0.1)),
      f32([1, 96, 96, 64], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] },
      { type: "CONV_2D", inputs: [7, 8, 2, 3, 4, 5, 6], outputs: [9] },
    ],
    inputIndexes: [0],
    outputIndexes: [9],
  };
}

const INPUT = new Uint8Array(seededFloats(96 * 96 * 32, 4, 2).buffer).toBase64();

async function compile(server: TestServer): Promise<string> {
  const model = await server.request("POST", "/v1/models", convolutionModel());
  strictEqual(model.status, 201, JSON.stringify(model.body));
  const compilation = await server.request("POST", "/v1/compilations", {
    model: model.body.id,
    devices: ["cpu-simd", "cpu-reference"],
  });
  strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
  return String(compilation.body.id);
}

async function execute(server: TestServer, compilation: string, deadlineMs?: number) {
  return await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [{ base64: INPUT }],
    outputEncoding: "base64",
    ...(deadlineMs === undefined ? {} : { deadlineMs }),
  });
}

/** The output of one execution on a one-thread server. */
async function oneThreadOutput(): Promise<string> {
  let output = "";
  await withTestServer({ workers: 1, threads: 1 }, async (server) => {
    const result = await execute(server, await compile(server));
    strictEqual(result.status, 200, JSON.stringify(result.body));
    output = (result.body.outputs as { base64: string }[])[0].base64;
    strictEqual(await metric(server.url, "nnserve_kernel_split_calls_total"), 0);
  });
  return output;
}

/** Polls a gauge until it reads `value` (a lane's worker takes a second or so to start). */
async function until(server: TestServer, name: string, value: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (await metric(server.url, name) !== value && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  strictEqual(await metric(server.url, name), value, `${name} reaches ${value}`);
}

Deno.test("with two threads the executor starts its lane at once, and the first execution splits its convolutions and gives the one-thread bytes", async () => {
  const want = await oneThreadOutput();
  await withTestServer({ workers: 1, threads: 2 }, async (server) => {
    // The lane starts with the executor, before any execution.
    await until(server, "nnserve_compute_lanes_ready", 1);
    const compilation = await compile(server);
    const result = await execute(server, compilation);
    strictEqual(result.status, 200, JSON.stringify(result.body));
    deepStrictEqual((result.body.outputs as { base64: string }[])[0].base64, want);
    ok((await metric(server.url, "nnserve_kernel_split_calls_total") ?? 0) > 0, "calls were split");
    strictEqual(await metric(server.url, "nnserve_kernel_threads_free"), 2, "every thread free");
  });
});

Deno.test("concurrent executions share two threads and give every thread back", async () => {
  const want = await oneThreadOutput();
  await withTestServer({ workers: 2, threads: 2 }, async (server) => {
    const compilation = await compile(server);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => execute(server, compilation)),
    );
    for (const result of results) {
      strictEqual(result.status, 200, JSON.stringify(result.body));
      deepStrictEqual((result.body.outputs as { base64: string }[])[0].base64, want);
    }
    strictEqual(await metric(server.url, "nnserve_kernel_threads_free"), 2, "every thread free");
  });
});

Deno.test("an execution that overruns its deadline gives its threads back with its worker", async () => {
  await withTestServer({ workers: 1, threads: 2 }, async (server) => {
    const compilation = await compile(server);
    strictEqual((await execute(server, compilation)).status, 200);
    // A deadline short enough to pass while the execution runs (not before it starts).
    let overran = false;
    for (const deadlineMs of [2, 4, 6, 8, 12, 16]) {
      const late = await execute(server, compilation, deadlineMs);
      if (late.status === 200) break;
      strictEqual(late.status, 504, JSON.stringify(late.body));
      overran ||= /overran/.test(String(late.body.message));
      if (overran) break;
    }
    ok(overran, "an execution overran its deadline while running");
    strictEqual(await metric(server.url, "nnserve_kernel_threads_free"), 2, "every thread free");
    // The replacement worker starts a lane of its own and serves the next execution.
    await until(server, "nnserve_compute_lanes_ready", 1);
    strictEqual((await execute(server, compilation)).status, 200);
    strictEqual(await metric(server.url, "nnserve_kernel_threads_free"), 2, "every thread free");
  });
});
