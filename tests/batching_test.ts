/**
 * Dynamic batching (`batching` on a compilation): concurrent executions stacked along their
 * inputs' first extent into one run give each the bytes it gets unbatched; executions of
 * other extents wait for their own batch; deadlines and errors stay each execution's own; a
 * full batch queue answers 429; REST, `/v2` and burst executions share batches; the repository's
 * `config.json` asks for it and `/v2` reports it as Triton does. Every batch of several forms
 * by reaching its size (the queue delay is 10 s), never by timing; the one test of the queue
 * delay asserts only that an execution waits it out (a lower bound).
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { seededFloats } from "../kernels/seeded_random.ts";
import { batchSizes } from "../driver/execution/dynamic_batcher.ts";
import { MAX_SHAPE_BINDINGS } from "../driver/execution/shape_bindings.ts";
import { NnClient } from "../client/mod.ts";
import {
  batchRuns,
  float32Tensor,
  int32Scalar,
  type TestServer,
  withTestServer,
  writeTree,
} from "./server_fixture.ts";

const DEPTH = 8;
const UNITS = 5;

/** out = tanh(x W^T + b): x [batch, 8] with the batch left open, out [batch, 5]. */
function denseModel() {
  return {
    operands: [
      float32Tensor([0, DEPTH], "MODEL_INPUT"),
      float32Tensor([UNITS, DEPTH], "CONSTANT_COPY", [...seededFloats(UNITS * DEPTH, 1, 1)]),
      float32Tensor([UNITS], "CONSTANT_COPY", [...seededFloats(UNITS, 2, 1)]),
      int32Scalar(0),
      float32Tensor([0, UNITS], "TEMPORARY_VARIABLE"),
      float32Tensor([0, UNITS], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "FULLY_CONNECTED", inputs: [0, 1, 2, 3], outputs: [4] },
      { type: "TANH", inputs: [4], outputs: [5] },
    ],
    inputIndexes: [0],
    outputIndexes: [5],
  };
}

/** out = tanh(x), every extent open: executions of other widths cannot share a batch. */
function tanhModel() {
  return {
    operands: [float32Tensor([0, 0], "MODEL_INPUT"), float32Tensor([0, 0], "MODEL_OUTPUT")],
    operations: [{ type: "TANH", inputs: [0], outputs: [1] }],
    inputIndexes: [0],
    outputIndexes: [1],
  };
}

/** A batch forms only by reaching its size: the oldest execution could wait 10 s. */
const NEVER_BY_DELAY = 10_000_000;

async function compile(server: TestServer, model: unknown, batching?: unknown) {
  const registered = await server.request("POST", "/v1/models", model);
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const compiled = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
    ...(batching ? { batching } : {}),
  });
  strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
  return compiled.body.id as string;
}

function execute(server: TestServer, compilation: string, body: unknown) {
  return server.request("POST", `/v1/compilations/${compilation}/executions`, body);
}

function rowsOf(rows: number, seed: number, depth = DEPTH) {
  return { data: [...seededFloats(rows * depth, seed, 2)], dimensions: [rows, depth] };
}

async function until(condition: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The value of the first `/metrics` line starting with `series` (NaN when none does). */
async function metricValue(server: TestServer, series: string): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(series));
  return Number(line?.slice(line.lastIndexOf(" ") + 1));
}

function batchQueued(server: TestServer): Promise<number> {
  return metricValue(server, "nnserve_batch_queued ");
}

Deno.test("batched executions answer bit for bit what they answer unbatched", async () => {
  await withTestServer({}, async (server) => {
    const plain = await compile(server, denseModel());
    const batched = await compile(server, denseModel(), {
      maxBatchSize: 6,
      maxQueueDelayUs: NEVER_BY_DELAY,
    });
    // Rows 1 + 2 + 1 + 1 + 1 = 6: one run, when the last arrives.
    const requests = [1, 2, 1, 1, 1].map((rows, k) => ({
      inputs: [rowsOf(rows, 10 + k)],
      outputEncoding: "base64",
    }));
    const together = await Promise.all(requests.map((r) => execute(server, batched, r)));
    const alone: Awaited<ReturnType<typeof execute>>[] = [];
    for (const r of requests) alone.push(await execute(server, plain, r));
    together.forEach((answer, k) => {
      strictEqual(answer.status, 200, JSON.stringify(answer.body));
      deepStrictEqual(answer.body.outputs, alone[k].body.outputs);
    });
    deepStrictEqual(
      (together[1].body.outputs as { dimensions: number[] }[])[0].dimensions,
      [2, UNITS],
    );
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 6 });
  });
});

Deno.test("executions of other extents wait for a batch of their own", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, tanhModel(), {
      maxBatchSize: 2,
      maxQueueDelayUs: NEVER_BY_DELAY,
    });
    const narrow = (seed: number) => execute(server, id, { inputs: [rowsOf(1, seed, 3)] });
    const wide = (seed: number) => execute(server, id, { inputs: [rowsOf(1, seed, 4)] });
    const answers = await Promise.all([narrow(1), wide(2), narrow(3), wide(4)]);
    for (const answer of answers) strictEqual(answer.status, 200, JSON.stringify(answer.body));
    deepStrictEqual(
      answers.map((a) => (a.body.outputs as { dimensions: number[] }[])[0].dimensions),
      [[1, 3], [1, 4], [1, 3], [1, 4]],
    );
    deepStrictEqual(await batchRuns(server), { runs: 2, rows: 4 });
  });
});

Deno.test("a lone execution waits out its queue delay, then runs alone", async () => {
  await withTestServer({}, async (server) => {
    // 40 ms: long enough to tell apart from no wait, far below NEVER_BY_DELAY.
    const id = await compile(server, denseModel(), { maxBatchSize: 4, maxQueueDelayUs: 40_000 });
    const sent = performance.now();
    const answer = await execute(server, id, { inputs: [rowsOf(1, 5)] });
    const elapsedMs = performance.now() - sent;
    strictEqual(answer.status, 200, JSON.stringify(answer.body));
    ok(elapsedMs >= 40, `answered after ${elapsedMs} ms, before its 40 ms queue delay`);
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 1 });
    const delay = await metricValue(server, "nnserve_batch_queue_delay_seconds_sum");
    ok(delay >= 0.04, `queue delay sum ${delay} s`);
  });
});

Deno.test("run sizes: the preferred ones; by default every size up to a maxBatchSize of 8, powers of two beyond", () => {
  deepStrictEqual(batchSizes({ maxBatchSize: 6, maxQueueDelayUs: 0 }), [1, 2, 3, 4, 5, 6]);
  deepStrictEqual(
    batchSizes({ maxBatchSize: MAX_SHAPE_BINDINGS, maxQueueDelayUs: 0 }).length,
    MAX_SHAPE_BINDINGS,
  );
  deepStrictEqual(batchSizes({ maxBatchSize: 20, maxQueueDelayUs: 0 }), [1, 2, 4, 8, 16, 20]);
  deepStrictEqual(
    batchSizes({ maxBatchSize: 8, preferredBatchSizes: [4, 2], maxQueueDelayUs: 0 }),
    [2, 4, 8],
  );
});

Deno.test("a batch runs the rows it holds up to a maxBatchSize of 8, padded to the next power of two beyond", async () => {
  await withTestServer({}, async (server) => {
    // Two executions sent together (1 + 2 rows) form one batch when the first one's queue
    // delay of 1.5 s ends: the second comes within it unless the host stalls that long.
    const batching = { maxQueueDelayUs: 1_500_000 };
    const unpadded = await compile(server, denseModel(), { maxBatchSize: 8, ...batching });
    const padded = await compile(server, denseModel(), { maxBatchSize: 16, ...batching });
    const requests = [1, 2].map((rows, k) => ({
      inputs: [rowsOf(rows, 60 + k)],
      outputEncoding: "base64",
    }));
    const plain = await compile(server, denseModel());
    const alone: unknown[] = [];
    for (const r of requests) alone.push((await execute(server, plain, r)).body.outputs);
    for (const [id, rows] of [[unpadded, 3], [padded, 3 + 4]] as const) {
      const answers = await Promise.all(requests.map((r) => execute(server, id, r)));
      answers.forEach((answer, k) => {
        strictEqual(answer.status, 200, JSON.stringify(answer.body));
        deepStrictEqual(answer.body.outputs, alone[k]);
      });
      strictEqual((await batchRuns(server)).rows, rows, "rows run, padding included");
    }
  });
});

Deno.test("a queued execution's deadline is its own; a full batch queue answers 429", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, tanhModel(), {
      maxBatchSize: 2,
      maxQueueDelayUs: NEVER_BY_DELAY,
      maxQueueSize: 2,
    });
    const run = (width: number, seed: number, deadlineMs?: number) =>
      execute(server, id, { inputs: [rowsOf(1, seed, width)], deadlineMs });
    // Two widths, each waiting for a partner of its own: the queue is full.
    const waiting = [run(3, 1, 1500), run(4, 2, 1500)];
    await until(async () => (await batchQueued(server)) === 2, "two queued executions");
    const refused = await run(3, 3);
    strictEqual(refused.status, 429, JSON.stringify(refused.body));
    strictEqual(refused.body.limit, "batch_queue");
    for (const answer of await Promise.all(waiting)) {
      strictEqual(answer.status, 504, JSON.stringify(answer.body));
      strictEqual(answer.body.status, "MISSED_DEADLINE_TRANSIENT");
    }
    strictEqual(await batchQueued(server), 0);
    // The queue is free again, and a full batch runs.
    for (const answer of await Promise.all([run(3, 4), run(3, 5)])) {
      strictEqual(answer.status, 200, JSON.stringify(answer.body));
    }
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 2 });
  });
});

Deno.test("an execution's error in a batch is its own", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, denseModel(), {
      maxBatchSize: 3,
      maxQueueDelayUs: NEVER_BY_DELAY,
    });
    const memory = await fetch(`${server.url}/v1/memories`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array(4 * UNITS),
    });
    strictEqual(memory.status, 201);
    const { id: pool } = await memory.json();
    const answers = await Promise.all([
      execute(server, id, { inputs: [rowsOf(1, 1)] }),
      // Two rows of output into room for one.
      execute(server, id, {
        inputs: [rowsOf(2, 2)],
        outputs: [{ memory: pool, offset: 0, length: 4 * UNITS }],
      }),
    ]);
    strictEqual(answers[0].status, 200, JSON.stringify(answers[0].body));
    strictEqual(answers[1].status, 422, JSON.stringify(answers[1].body));
    strictEqual(answers[1].body.status, "OUTPUT_INSUFFICIENT_SIZE");
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 3 });
  });
});

Deno.test("a batch that fails runs each execution again on its own rows: the fault is the one execution's", async () => {
  await withTestServer({}, async (server) => {
    // out = GATHER(table [10, 4], axis 0, indices [batch]): an index past 9 fails the run.
    const table = [...seededFloats(40, 5, 1)];
    const id = await compile(server, {
      operands: [
        float32Tensor([10, 4], "CONSTANT_COPY", table),
        int32Scalar(0),
        { type: "TENSOR_INT32", dimensions: [0], lifetime: "MODEL_INPUT" },
        float32Tensor([0, 4], "MODEL_OUTPUT"),
      ],
      operations: [{ type: "GATHER", inputs: [0, 1, 2], outputs: [3] }],
      inputIndexes: [2],
      outputIndexes: [3],
    }, { maxBatchSize: 4, maxQueueDelayUs: NEVER_BY_DELAY });
    const indices = [[3, 7], [99], [0]];
    const answers = await Promise.all(
      indices.map((data) => execute(server, id, { inputs: [{ data, dimensions: [data.length] }] })),
    );
    strictEqual(answers[1].status, 400, JSON.stringify(answers[1].body));
    ok(/holds 99, outside \[0, 10\)/.test(answers[1].body.message as string));
    for (const k of [0, 2]) {
      strictEqual(answers[k].status, 200, JSON.stringify(answers[k].body));
      const rows = indices[k].flatMap((row) => table.slice(row * 4, row * 4 + 4));
      deepStrictEqual(answers[k].body.outputs, [{
        dimensions: [indices[k].length, 4],
        data: [...new Float32Array(rows)],
      }]);
    }
    // One batch of 4 rows formed (and failed); the executions then ran alone.
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 4 });
  });
});

/** {@link denseModel} as exported with a batch of one: every first extent fixed at 1. */
function denseModelOfOneRow() {
  const model = denseModel();
  model.operands[0] = float32Tensor([1, DEPTH], "MODEL_INPUT");
  model.operands[4] = float32Tensor([1, UNITS], "TEMPORARY_VARIABLE");
  model.operands[5] = float32Tensor([1, UNITS], "MODEL_OUTPUT");
  return model;
}

/**
 * out = tanh(reshape(x, [1, -1]) W^T + b) with x [1, 2, 4]: the reshape folds whatever rows
 * come into one, so a second row would not stay apart.
 */
function foldingModel() {
  return {
    operands: [
      float32Tensor([1, 2, DEPTH / 2], "MODEL_INPUT"),
      { type: "TENSOR_INT32", dimensions: [2], lifetime: "CONSTANT_COPY", value: [1, -1] },
      float32Tensor([1, DEPTH], "TEMPORARY_VARIABLE"),
      float32Tensor([UNITS, DEPTH], "CONSTANT_COPY", [...seededFloats(UNITS * DEPTH, 1, 1)]),
      float32Tensor([UNITS], "CONSTANT_COPY", [...seededFloats(UNITS, 2, 1)]),
      int32Scalar(0),
      float32Tensor([1, UNITS], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "RESHAPE", inputs: [0, 1], outputs: [2] },
      { type: "FULLY_CONNECTED", inputs: [2, 3, 4, 5], outputs: [6] },
    ],
    inputIndexes: [0],
    outputIndexes: [6],
  };
}

Deno.test("a model with a batch of one, declared batchable, is batched: each row bit for bit its own", async () => {
  await withTestServer({}, async (server) => {
    const plain = await compile(server, denseModelOfOneRow());
    const batched = await compile(server, denseModelOfOneRow(), {
      maxBatchSize: 4,
      maxQueueDelayUs: NEVER_BY_DELAY,
    });
    const requests = [0, 1, 2, 3].map((k) => ({
      inputs: [rowsOf(1, 30 + k)],
      outputEncoding: "base64",
    }));
    const together = await Promise.all(requests.map((r) => execute(server, batched, r)));
    for (const [k, answer] of together.entries()) {
      strictEqual(answer.status, 200, JSON.stringify(answer.body));
      const alone = await execute(server, plain, requests[k]);
      strictEqual(alone.status, 200, JSON.stringify(alone.body));
      deepStrictEqual(answer.body.outputs, alone.body.outputs);
      deepStrictEqual((answer.body.outputs as { dimensions: number[] }[])[0].dimensions, [
        1,
        UNITS,
      ]);
    }
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 4 });
    // As Triton's max_batch_size says (which /v2 reports): an execution may bring rows of
    // its own, each the same as alone.
    const pairs = [40, 41].map((seed) => rowsOf(2, seed));
    const answers = await Promise.all(
      pairs.map((input) => execute(server, batched, { inputs: [input] })),
    );
    for (const [k, answer] of answers.entries()) {
      strictEqual(answer.status, 200, JSON.stringify(answer.body));
      const rows: number[] = [];
      for (const row of [0, 1]) {
        const data = pairs[k].data.slice(row * DEPTH, (row + 1) * DEPTH);
        const alone = await execute(server, plain, { inputs: [{ data, dimensions: [1, DEPTH] }] });
        rows.push(...(alone.body.outputs as { data: number[] }[])[0].data);
      }
      deepStrictEqual(answer.body.outputs, [{ dimensions: [2, UNITS], data: rows }]);
    }
    deepStrictEqual(await batchRuns(server), { runs: 2, rows: 8 });
  });
});

Deno.test("batching is refused for a model whose batch extent is fixed, or preferred sizes past the largest", async () => {
  await withTestServer({}, async (server) => {
    const mixed = denseModel();
    mixed.operands[5] = float32Tensor([1, UNITS], "MODEL_OUTPUT");
    mixed.operands[4] = float32Tensor([1, UNITS], "TEMPORARY_VARIABLE");
    for (
      const [model, batching, message] of [
        [mixed, { maxBatchSize: 4, maxQueueDelayUs: 0 }, /first extent .* output 0 is \[1,5\]/],
        [
          foldingModel(),
          { maxBatchSize: 4, maxQueueDelayUs: 0 },
          /rows that stay apart: operation 0 \(RESHAPE\) gives \[1,8\] with one row and \[1,16\] with two/,
        ],
        [
          denseModel(),
          { maxBatchSize: 4, preferredBatchSizes: [2, 8], maxQueueDelayUs: 0 },
          /preferred batch sizes of at most maxBatchSize \(4\): 8/,
        ],
      ] as const
    ) {
      const registered = await server.request("POST", "/v1/models", model);
      const refused = await server.request("POST", "/v1/compilations", {
        model: registered.body.id,
        batching,
      });
      strictEqual(refused.status, 400, JSON.stringify(refused.body));
      ok(message.test(refused.body.message as string), refused.body.message as string);
    }
  });
});

Deno.test("a repository entry asks for batching; /v2 reports it as Triton does and batches with REST", async () => {
  const repository = await Deno.makeTempDir({ prefix: "nnserve-repository-" });
  await writeTree(repository, {
    "dense/1/model.json": JSON.stringify(denseModel()),
    "dense/config.json": JSON.stringify({
      batching: { maxBatchSize: 2, preferredBatchSizes: [2], maxQueueDelayUs: NEVER_BY_DELAY },
    }),
  });
  try {
    await withTestServer({ modelRepository: repository }, async (server) => {
      await server.ready;
      const config = await server.request("GET", "/v2/models/dense/config");
      strictEqual(config.status, 200, JSON.stringify(config.body));
      strictEqual(config.body.max_batch_size, 2);
      deepStrictEqual(config.body.dynamic_batching, {
        preferred_batch_size: [2],
        max_queue_delay_microseconds: NEVER_BY_DELAY,
        default_queue_policy: { max_queue_size: 64 },
      });
      deepStrictEqual((config.body.input as { dims: number[] }[])[0].dims, [DEPTH]);
      const { body: compilations } = await server.request("GET", "/v1/compilations");
      const [compilation] = compilations.compilations as { id: string; batching: unknown }[];
      deepStrictEqual(compilation.batching, {
        maxBatchSize: 2,
        preferredBatchSizes: [2],
        maxQueueDelayUs: NEVER_BY_DELAY,
      });
      const input = rowsOf(1, 5);
      const [v2, rest] = await Promise.all([
        server.request("POST", "/v2/models/dense/infer", {
          inputs: [{ name: "input0", datatype: "FP32", shape: input.dimensions, data: input.data }],
        }),
        execute(server, compilation.id, { inputs: [rowsOf(1, 6)] }),
      ]);
      strictEqual(v2.status, 200, JSON.stringify(v2.body));
      strictEqual(rest.status, 200, JSON.stringify(rest.body));
      deepStrictEqual(await batchRuns(server), { runs: 1, rows: 2 });
    });
  } finally {
    await Deno.remove(repository, { recursive: true });
  }
});

Deno.test("a burst's executions and REST ones share a batch, each answered with its rows", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const registered = await server.request("POST", "/v1/models", denseModel());
    const compilation = await client.compile(registered.body.id as string, {
      batching: { maxBatchSize: 4, maxQueueDelayUs: NEVER_BY_DELAY },
    });
    const plain = await compile(server, denseModel());
    await using burst = await compilation.burst();
    const frames = [rowsOf(1, 31), rowsOf(1, 32)];
    // Two frames in flight on the burst and two rows by REST: one run of 4.
    const [first, second, rest] = await Promise.all([
      burst.compute([frames[0]]),
      burst.compute([frames[1]]),
      execute(server, compilation.info.id, { inputs: [rowsOf(2, 33)], outputEncoding: "base64" }),
    ]);
    strictEqual(rest.status, 200, JSON.stringify(rest.body));
    for (const [k, result] of [first, second].entries()) {
      const alone = await execute(server, plain, { inputs: [frames[k]], outputEncoding: "base64" });
      const [output] = alone.body.outputs as { base64: string }[];
      const data = result.outputs[0].data as Float32Array;
      deepStrictEqual(
        new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
        Uint8Array.fromBase64(output.base64),
      );
    }
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 4 });
  });
});
