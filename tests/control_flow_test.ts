/**
 * IF and WHILE (HAL 1.3 control flow) end to end through a real server: models with
 * referenced subgraphs are registered, reported supported, compiled and run. Every expected
 * value is worked out by hand from the model (see `control_flow_models.ts`).
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { FuseCode, NnClient } from "../client/mod.ts";
import {
  float32Tensor,
  int32Scalar,
  startTestServer,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";
import {
  condition,
  type ControlFlowModel,
  type GraphJson,
  ifAddOrMul,
  subgraph,
  whileFibonacci,
  whileForever,
  whileGrowing,
  whileSumOfPowers,
  whileWithIf,
} from "./control_flow_models.ts";
import { loopTimeoutMs, MAX_LOOP_TIMEOUT_MS } from "../driver/execution/control_flow/run.ts";

interface Output {
  dimensions: number[];
  data: number[];
}

/** Registers and compiles a model; returns the model's and the compilation's bodies. */
async function compile(
  server: TestServer,
  model: ControlFlowModel,
  options: Record<string, unknown> = {},
) {
  const registered = await server.request("POST", "/v1/models", model);
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const compilation = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
    ...options,
  });
  strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
  return { model: registered.body, compilation: compilation.body };
}

/** Runs a compilation; returns status and body. */
function execute(server: TestServer, compilation: unknown, request: Record<string, unknown>) {
  return server.request("POST", `/v1/compilations/${compilation}/executions`, request);
}

/** Runs a compilation that must succeed; returns its outputs. */
async function outputs(
  server: TestServer,
  compilation: unknown,
  inputs: { data: number[]; dimensions?: number[] }[],
): Promise<Output[]> {
  const result = await execute(server, compilation, { inputs });
  strictEqual(result.status, 200, JSON.stringify(result.body));
  return result.body.outputs as Output[];
}

/**
 * How much later than its time limit a loop's answer may come: the suite runs its files in
 * parallel on two cores, so a timer can fire seconds late; the bounds check that a limit
 * stops the loop at all, which an endless loop without it never does.
 */
const LOADED_SLACK_MS = 5000;

Deno.test("IF runs the branch its runtime condition selects: ADD when true, MUL when false", async () => {
  await withTestServer({}, async (server) => {
    for (const dimensions of [[2], [0]]) {
      const { model, compilation } = await compile(server, ifAddOrMul(dimensions));
      strictEqual(model.halVersion, "V1_3");
      const x = { data: [1, 2] };
      const y = { data: [3, 4] };
      deepStrictEqual(await outputs(server, compilation.id, [{ data: [1] }, x, y]), [
        { dimensions: [2], data: [4, 6] },
      ]);
      deepStrictEqual(await outputs(server, compilation.id, [{ data: [0] }, x, y]), [
        { dimensions: [2], data: [3, 8] },
      ]);
    }
  });
});

Deno.test("supported-operations reports IF on the device that runs control flow only", async () => {
  await withTestServer({}, async (server) => {
    const registered = await server.request("POST", "/v1/models", ifAddOrMul());
    const support = await server.request(
      "POST",
      `/v1/models/${registered.body.id}/supported-operations`,
      {},
    );
    strictEqual(support.status, 200);
    const devices = support.body.devices as { name: string; supported: boolean[] }[];
    deepStrictEqual(devices.find((d) => d.name === "cpu-reference")?.supported, [true]);
    deepStrictEqual(devices.find((d) => d.name === "cpu-simd")?.supported, [false]);
    const simdOnly = await server.request("POST", "/v1/compilations", {
      model: registered.body.id,
      devices: ["cpu-simd"],
    });
    strictEqual(simdOnly.status, 400);
    ok(String(simdOnly.body.message).includes("operation 0 (IF) is not supported"));
  });
});

Deno.test("WHILE computes Fibonacci numbers with a state-only counter and an input-only bound", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileFibonacci());
    // F: 0 1 1 2 3 5 8 13 21 34 55 89; the loop leaves (F(n), F(n + 1)).
    deepStrictEqual(await outputs(server, compilation.id, [{ data: [10] }]), [
      { dimensions: [1], data: [55] },
      { dimensions: [1], data: [89] },
    ]);
    deepStrictEqual(await outputs(server, compilation.id, [{ data: [1] }]), [
      { dimensions: [1], data: [1] },
      { dimensions: [1], data: [1] },
    ]);
    // A loop whose condition is false at once returns its initial values.
    deepStrictEqual(await outputs(server, compilation.id, [{ data: [0] }]), [
      { dimensions: [1], data: [0] },
      { dimensions: [1], data: [1] },
    ]);
  });
});

Deno.test("nested WHILE loops compute a sum of powers", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileSumOfPowers());
    // 2 + 4 + 8 + 16 = 30; 3 + 9 + 27 = 39; an empty sum is 0.
    for (const [n, x, sum] of [[4, 2, 30], [3, 3, 39], [0, 5, 0]]) {
      deepStrictEqual(await outputs(server, compilation.id, [{ data: [n] }, { data: [x] }]), [
        { dimensions: [1], data: [sum] },
      ]);
    }
  });
});

Deno.test("an IF inside a WHILE body switches from adding to multiplying", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileWithIf());
    // x = 2: i = 0, 1, 2 add (2, 4, 6), then i = 3, 4 multiply (12, 24).
    for (const [n, sum] of [[5, 24], [2, 4], [0, 0]]) {
      deepStrictEqual(await outputs(server, compilation.id, [{ data: [n] }, { data: [2] }]), [
        { dimensions: [1], data: [sum] },
      ]);
    }
  });
});

Deno.test("a WHILE body may change an output's shape from iteration to iteration", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileGrowing());
    deepStrictEqual(
      await outputs(server, compilation.id, [{ data: [1], dimensions: [1] }, { data: [3] }]),
      [{ dimensions: [4], data: [1, 7, 7, 7] }],
    );
    deepStrictEqual(
      await outputs(server, compilation.id, [{ data: [5, 6], dimensions: [2] }, { data: [1] }]),
      [{ dimensions: [3], data: [5, 6, 7] }],
    );
  });
});

Deno.test("an endless WHILE fails with MISSED_DEADLINE_TRANSIENT once its loop timeout passes", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileForever());
    const started = performance.now();
    const result = await execute(server, compilation.id, {
      inputs: [{ data: [1] }],
      loopTimeoutMs: 300,
    });
    const elapsed = performance.now() - started;
    strictEqual(result.status, 504, JSON.stringify(result.body));
    strictEqual(result.body.status, "MISSED_DEADLINE_TRANSIENT");
    ok(String(result.body.message).includes("loop timeout of 300 ms"), String(result.body.message));
    // At its timeout, not never: the bound leaves a loaded machine seconds of slack.
    ok(elapsed >= 300 && elapsed < 300 + LOADED_SLACK_MS, `answered after ${elapsed} ms`);
    // The default is NNAPI's 2 s.
    const defaulted = performance.now();
    const second = await execute(server, compilation.id, { inputs: [{ data: [1] }] });
    const waited = performance.now() - defaulted;
    strictEqual(second.status, 504);
    ok(
      String(second.body.message).includes("loop timeout of 2000 ms"),
      String(second.body.message),
    );
    ok(waited >= 2000 && waited < 2000 + LOADED_SLACK_MS, `answered after ${waited} ms`);
    // The execution still works afterwards (its worker survived).
    const fib = await compile(server, whileFibonacci());
    deepStrictEqual((await outputs(server, fib.compilation.id, [{ data: [5] }]))[0].data, [5]);
  });
});

Deno.test("an execution's deadline stops a loop whose loop timeout is longer", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileForever());
    const started = performance.now();
    const result = await execute(server, compilation.id, {
      inputs: [{ data: [1] }],
      loopTimeoutMs: 10_000,
      deadlineMs: 300,
    });
    const elapsed = performance.now() - started;
    strictEqual(result.status, 504, JSON.stringify(result.body));
    strictEqual(result.body.status, "MISSED_DEADLINE_TRANSIENT");
    // Well before the 10 s loop timeout.
    ok(elapsed < 300 + LOADED_SLACK_MS, `answered after ${elapsed} ms`);
  });
});

Deno.test("loopTimeoutMs is clamped to NNAPI's 15 s maximum and must be positive", async () => {
  strictEqual(loopTimeoutMs(undefined), 2000);
  strictEqual(loopTimeoutMs(500), 500);
  strictEqual(loopTimeoutMs(60_000), MAX_LOOP_TIMEOUT_MS);
  strictEqual(MAX_LOOP_TIMEOUT_MS, 15_000);
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileFibonacci());
    const negative = await execute(server, compilation.id, {
      inputs: [{ data: [3] }],
      loopTimeoutMs: -1,
    });
    strictEqual(negative.status, 400);
    deepStrictEqual(negative.body.path, ["loopTimeoutMs"]);
    const large = await execute(server, compilation.id, {
      inputs: [{ data: [3] }],
      loopTimeoutMs: 1e9,
    });
    strictEqual(large.status, 200, JSON.stringify(large.body));
  });
});

Deno.test("a model with subgraphs round-trips through the compilation cache; its subgraphs are in the key", async () => {
  await withTestServer({}, async (server) => {
    const cache = { token: new Uint8Array(32).fill(7).toBase64() };
    const first = await compile(server, ifAddOrMul(), { cache });
    strictEqual(first.compilation.cache, "miss");
    const again = await server.request("POST", "/v1/compilations", {
      model: first.model.id,
      cache,
    });
    strictEqual(again.status, 201);
    strictEqual(again.body.cache, "hit");
    const x = { data: [1, 2] };
    const y = { data: [3, 4] };
    deepStrictEqual((await outputs(server, again.body.id, [{ data: [1] }, x, y]))[0].data, [4, 6]);
    deepStrictEqual((await outputs(server, again.body.id, [{ data: [0] }, x, y]))[0].data, [3, 8]);

    // Only the else branch differs (SUB for MUL): another checksum, another cache entry.
    const changed = ifAddOrMul();
    changed.referenced![1].operations[0].type = "SUB";
    const second = await compile(server, changed, { cache });
    ok(second.model.checksum !== first.model.checksum);
    strictEqual(second.compilation.cache, "miss");
    deepStrictEqual(
      (await outputs(server, second.compilation.id, [{ data: [0] }, x, y]))[0].data,
      [-2, -2],
    );

    // A restart revives the compilation from the cache, subgraphs and all.
    const nested = await compile(server, whileSumOfPowers(), { cache });
    strictEqual(nested.compilation.cache, "miss");
    const hit = await server.request("POST", "/v1/compilations", {
      model: nested.model.id,
      cache,
    });
    strictEqual(hit.body.cache, "hit");
    deepStrictEqual((await outputs(server, hit.body.id, [{ data: [4] }, { data: [2] }]))[0], {
      dimensions: [1],
      data: [30],
    });
  });
});

Deno.test("a model without subgraphs keeps its checksum; an empty referenced list changes nothing", async () => {
  await withTestServer({}, async (server) => {
    const plain = ifAddOrMul().referenced![0];
    const model = { ...plain, relaxComputationFloat32toFloat16: false };
    const a = await server.request("POST", "/v1/models", model);
    const b = await server.request("POST", "/v1/models", { ...model, referenced: [] });
    strictEqual(a.status, 201);
    strictEqual(b.status, 201);
    strictEqual(a.body.checksum, b.body.checksum);
    strictEqual(a.body.halVersion, "V1_0");
  });
});

Deno.test("the plan places IF and WHILE on cpu-reference and says so", async () => {
  await withTestServer({}, async (server) => {
    const { compilation } = await compile(server, whileWithIf());
    const plan = compilation.plan as { steps: { device: string; operations: number[] }[] };
    deepStrictEqual(plan.steps, [
      { ...plan.steps[0], device: "cpu-reference", operations: [0] },
    ]);
  });
});

Deno.test("the SDK builds an IF model whose branches are models of their own", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const tensor = { type: "TENSOR_FLOAT32" as const, dimensions: [2] };
    const branch = (type: "ADD" | "MUL") => {
      const b = client.model();
      const [x, y, act, out] = [
        b.addOperand(tensor),
        b.addOperand(tensor),
        b.addOperand({ type: "INT32" }),
        b.addOperand(tensor),
      ];
      b.setOperandValue(act, FuseCode.NONE);
      b.addOperation(type, [x, y, act], [out]);
      b.identifyInputsAndOutputs([x, y], [out]);
      return b;
    };
    const add = branch("ADD");
    const m = client.model();
    const cond = m.addOperand({ type: "TENSOR_BOOL8", dimensions: [1] });
    const then = m.addOperand({ type: "SUBGRAPH" });
    const otherwise = m.addOperand({ type: "SUBGRAPH" });
    const x = m.addOperand(tensor);
    const y = m.addOperand(tensor);
    const out = m.addOperand(tensor);
    m.setOperandValueFromModel(then, add);
    m.setOperandValueFromModel(otherwise, branch("MUL"));
    m.addOperation("IF", [cond, then, otherwise, x, y], [out]);
    m.identifyInputsAndOutputs([cond, x, y], [out]);

    const json = m.toJSON();
    strictEqual(json.referenced?.length, 2);
    deepStrictEqual(json.operands[then], {
      type: "SUBGRAPH",
      dimensions: [],
      scale: 0,
      zeroPoint: 0,
      lifetime: "SUBGRAPH",
      subgraph: 0,
    });
    strictEqual(json.operands[otherwise].subgraph, 1);
    throws(() => m.setOperandValueFromModel(x, add), /not SUBGRAPH/);
    throws(() => m.setOperandValue(then, [0]), /setOperandValueFromModel/);

    const compilation = await client.compile(m);
    const run = async (c: number) =>
      (await compilation.compute([new Uint8Array([c]), [1, 2], [3, 4]])).outputs[0].data;
    deepStrictEqual(await run(1), new Float32Array([4, 6]));
    deepStrictEqual(await run(0), new Float32Array([3, 8]));
    strictEqual(add.id, undefined, "a branch is sent inside its model, not registered");
  });
});

Deno.test("constants of referenced subgraphs, memory-pool ones included, survive storage and a restart", async () => {
  const first = await startTestServer();
  const ramp = (from: number) => Array.from({ length: 64 }, (_, i) => from + i);
  const memory = await fetch(`${first.url}/v1/memories`, {
    method: "POST",
    headers: { "content-type": "application/octet-stream" },
    body: new Uint8Array(new Float32Array(ramp(100)).buffer),
  });
  strictEqual(memory.status, 201);
  const { id: pool } = await memory.json();
  /** out = x + c, with c a large constant (CONSTANT_REFERENCE): by value or from the pool. */
  const addConstant = (c: Record<string, unknown>): GraphJson => ({
    operands: [
      float32Tensor([64], "MODEL_INPUT"),
      { ...float32Tensor([64], "CONSTANT_REFERENCE"), ...c },
      int32Scalar(0),
      float32Tensor([64], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0],
    outputIndexes: [3],
  });
  const model = {
    operands: [
      condition("MODEL_INPUT"),
      subgraph(0),
      subgraph(1),
      float32Tensor([64], "MODEL_INPUT"),
      float32Tensor([64], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "IF", inputs: [0, 1, 2, 3], outputs: [4] }],
    inputIndexes: [0, 3],
    outputIndexes: [4],
    referenced: [
      addConstant({ value: ramp(0) }),
      addConstant({ location: { poolIndex: 0, offset: 0, length: 256 } }),
    ],
    pools: [pool],
  };
  const ones = { data: new Array(64).fill(1) };
  let compilation: unknown;
  try {
    const { compilation: compiled } = await compile(first, model);
    compilation = compiled.id;
    deepStrictEqual((await outputs(first, compilation, [{ data: [1] }, ones]))[0].data, ramp(1));
    // The pool's bytes were copied at registration: rewriting the memory changes nothing.
    const rewrite = await fetch(`${first.url}/v1/memories/${pool}?offset=0`, {
      method: "PUT",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array(256),
    });
    await rewrite.body?.cancel();
    deepStrictEqual((await outputs(first, compilation, [{ data: [0] }, ones]))[0].data, ramp(101));
  } finally {
    await first.close();
  }
  // After a restart the compilation is prepared again from the stored model document.
  const second = await startTestServer({ dataDir: first.dataDir });
  try {
    deepStrictEqual((await outputs(second, compilation, [{ data: [0] }, ones]))[0].data, ramp(101));
    deepStrictEqual((await outputs(second, compilation, [{ data: [1] }, ones]))[0].data, ramp(1));
  } finally {
    await second.close();
    await Deno.remove(first.dataDir, { recursive: true });
  }
});

Deno.test("the OpenAPI document describes referenced subgraphs, SUBGRAPH operands and loopTimeoutMs", async () => {
  await withTestServer({}, async (server) => {
    const doc = await (await fetch(`${server.url}/openapi.json`)).json();
    const model = doc.paths["/v1/models"].post.requestBody.content["application/json"].schema;
    ok(String(model.properties.referenced.description).includes("SUBGRAPH"));
    const operand = model.properties.operands.items.properties;
    ok(operand.type.enum.includes("SUBGRAPH"));
    ok(operand.lifetime.enum.includes("SUBGRAPH"));
    ok(String(operand.subgraph.description).includes("referenced"));
    const execution = JSON.stringify(doc.components.schemas.ExecutionRequest);
    ok(execution.includes("loopTimeoutMs") && execution.includes("15000"));
  });
});
