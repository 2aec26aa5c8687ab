/**
 * The device seam over HTTP: the devices listed, support answered per device, compilations
 * restricted to devices (NNAPI `createForDevices`), and a model whose operations only some
 * devices run split across them with the same results as the reference device alone.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { float32Tensor, int32Scalar, type TestServer, withTestServer } from "./server_fixture.ts";

/** FULLY_CONNECTED (constant weights) -> SOFTMAX: only the first runs on cpu-simd. */
function fullyConnectedSoftmax() {
  const tensor = float32Tensor;
  return {
    operands: [
      tensor([2, 3], "MODEL_INPUT"),
      tensor([4, 3], "CONSTANT_COPY", [1, 0, -1, 0.5, 0.5, 0.5, 2, -2, 0, 0, 0, 1]),
      tensor([4], "CONSTANT_COPY", [0, 0.1, 0.2, 0.3]),
      int32Scalar(0),
      tensor([2, 4], "TEMPORARY_VARIABLE"),
      {
        type: "FLOAT32",
        dimensions: [],
        scale: 0,
        zeroPoint: 0,
        lifetime: "CONSTANT_COPY",
        value: [1],
      },
      tensor([2, 4], "MODEL_OUTPUT"),
    ],
    operations: [
      { type: "FULLY_CONNECTED", inputs: [0, 1, 2, 3], outputs: [4] },
      { type: "SOFTMAX", inputs: [4, 5], outputs: [6] },
    ],
    inputIndexes: [0],
    outputIndexes: [6],
  };
}

async function run(server: TestServer, compilation: string): Promise<number[]> {
  const result = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [{ data: [1, 2, 3, -1, 0.5, 4] }],
  });
  strictEqual(result.status, 200, JSON.stringify(result.body));
  return (result.body.outputs as { data: number[] }[])[0].data;
}

/** The host devices alone (NNSERVE_DEVICES), for tests of how plans use them. */
const HOST_ONLY = { devices: ["cpu-simd", "cpu-reference"] };

Deno.test("GET /v1/devices lists the SIMD and the reference CPU and onnxruntime, or those NNSERVE_DEVICES names", async () => {
  await withTestServer({}, async (server) => {
    const { body } = await server.request("GET", "/v1/devices");
    const devices = body.devices as { name: string; type: string; version: string }[];
    deepStrictEqual(devices.map((d) => [d.name, d.type]), [
      ["cpu-simd", "CPU"],
      ["cpu-reference", "CPU"],
      ["onnxruntime", "CPU"],
    ]);
    ok(devices.every((d) => /^\d+\.\d+\.\d+/.test(d.version)));
  });
  await withTestServer({ devices: ["cpu-reference", "onnxruntime"] }, async (server) => {
    const { body } = await server.request("GET", "/v1/devices");
    const devices = body.devices as { name: string }[];
    deepStrictEqual(devices.map((d) => d.name), ["cpu-reference", "onnxruntime"]);
  });
});

Deno.test("supported-operations answers per device, and compilations keep to their devices", async () => {
  await withTestServer(HOST_ONLY, async (server) => {
    const model = await server.request("POST", "/v1/models", fullyConnectedSoftmax());
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const support = await server.request(
      "POST",
      `/v1/models/${model.body.id}/supported-operations`,
      {},
    );
    deepStrictEqual(support.body.devices, [
      { name: "cpu-simd", supported: [true, false] },
      { name: "cpu-reference", supported: [true, true] },
    ]);
    const simdOnly = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-simd"],
    });
    strictEqual(simdOnly.status, 400);
    match(simdOnly.body.message as string, /operation 1 \(SOFTMAX\) is not supported by cpu-simd/);
    deepStrictEqual(simdOnly.body.path, ["operations", 1]);
    const unknown = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["tpu"],
    });
    strictEqual(unknown.status, 400);
    match(unknown.body.message as string, /unknown device "tpu"/);

    const reference = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    const split = await server.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(reference.status, 201);
    strictEqual(split.status, 201);
    const want = await run(server, reference.body.id as string);
    const got = await run(server, split.body.id as string);
    strictEqual(got.length, 8);
    got.forEach((v, i) => ok(Math.abs(v - want[i]) <= 1e-6, `output ${i}: ${v} vs ${want[i]}`));
  });
});

/**
 * CONV_2D -> RELU -> FULLY_CONNECTED -> SOFTMAX: the convolution and the matrix product run
 * on cpu-simd, the activations only on cpu-reference, so the plan alternates.
 */
function alternatingModel() {
  const tensor = float32Tensor;
  const ramp = (n: number, scale: number) =>
    Array.from({ length: n }, (_, i) => ((i % 7) - 3) * scale);
  return {
    operands: [
      tensor([1, 4, 4, 2], "MODEL_INPUT"), // 0
      tensor([3, 3, 3, 2], "CONSTANT_COPY", ramp(54, 0.1)),
      tensor([3], "CONSTANT_COPY", [0.1, 0, -0.1]),
      int32Scalar(1), // 3: SAME
      int32Scalar(1), // 4: stride 1
      int32Scalar(0), // 5: no activation
      tensor([1, 4, 4, 3], "TEMPORARY_VARIABLE"), // 6
      tensor([1, 4, 4, 3], "TEMPORARY_VARIABLE"), // 7
      tensor([5, 48], "CONSTANT_COPY", ramp(240, 0.05)),
      tensor([5], "CONSTANT_COPY", [0, 0.1, 0.2, 0.3, 0.4]),
      tensor([1, 5], "TEMPORARY_VARIABLE"), // 10
      {
        type: "FLOAT32",
        dimensions: [],
        scale: 0,
        zeroPoint: 0,
        lifetime: "CONSTANT_COPY",
        value: [1],
      },
      tensor([1, 5], "MODEL_OUTPUT"), // 12
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
      { type: "RELU", inputs: [6], outputs: [7] },
      { type: "FULLY_CONNECTED", inputs: [7, 8, 9, 5], outputs: [10] },
      { type: "SOFTMAX", inputs: [10, 11], outputs: [12] },
    ],
    inputIndexes: [0],
    outputIndexes: [12],
  };
}

const INPUT = Array.from({ length: 32 }, (_, i) => Math.sin(i));

async function outputsOf(server: TestServer, compilation: string): Promise<number[]> {
  const result = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [{ data: INPUT }],
  });
  strictEqual(result.status, 200, JSON.stringify(result.body));
  return (result.body.outputs as { data: number[] }[])[0].data;
}

interface PlanJson {
  objective: string;
  estimatedCost: number;
  switches: number;
  steps: { device: string; operations: number[]; estimatedCost: number }[];
}

Deno.test("the plan is visible: it alternates devices where each is cheaper, with the same results", async () => {
  await withTestServer(HOST_ONLY, async (server) => {
    const model = await server.request("POST", "/v1/models", alternatingModel());
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const created = await server.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(created.status, 201, JSON.stringify(created.body));
    const plan = created.body.plan as PlanJson;
    deepStrictEqual(plan.steps.map((s) => [s.device, s.operations]), [
      ["cpu-simd", [0]],
      ["cpu-reference", [1]],
      ["cpu-simd", [2]],
      ["cpu-reference", [3]],
    ]);
    strictEqual(plan.switches, 3);
    strictEqual(plan.objective, "latency");
    ok(plan.steps.every((s) => s.estimatedCost > 0));
    const sum = plan.steps.reduce((n, s) => n + s.estimatedCost, 0);
    ok(Math.abs(plan.estimatedCost - sum) <= 1e-9 * sum, "latency is the sum of the steps");
    const described = await server.request("GET", `/v1/compilations/${created.body.id}`);
    strictEqual(described.status, 200);
    deepStrictEqual(described.body.plan, plan);
    deepStrictEqual(described.body.devices, ["cpu-simd", "cpu-reference"]);

    const reference = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    deepStrictEqual(
      (reference.body.plan as PlanJson).steps.map((s) => [s.device, s.operations]),
      [["cpu-reference", [0, 1, 2, 3]]],
    );
    const want = await outputsOf(server, reference.body.id as string);
    const got = await outputsOf(server, created.body.id as string);
    got.forEach((v, i) => ok(Math.abs(v - want[i]) <= 1e-5, `output ${i}: ${v} vs ${want[i]}`));

    const sustained = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      preference: "SUSTAINED_SPEED",
    });
    deepStrictEqual(sustained.body.plan, plan);
    strictEqual(
      (await server.request("GET", "/v1/compilations/no-such-compilation")).status,
      404,
    );
  });
});

Deno.test("device costs decide the plan: a reference CPU made cheaper takes every operation", async () => {
  const deviceCosts = {
    "cpu-reference": { microsPerWork: 1e-6 },
    "cpu-simd": { microsPerWork: 1 },
  };
  await withTestServer({ deviceCosts }, async (server) => {
    const model = await server.request("POST", "/v1/models", alternatingModel());
    const created = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const plan = created.body.plan as PlanJson;
    deepStrictEqual(plan.steps.map((s) => [s.device, s.operations]), [
      ["cpu-reference", [0, 1, 2, 3]],
    ]);
    strictEqual(plan.switches, 0);
  });
});

/** FULLY_CONNECTED three times over [1, 8]: every step runs on both CPUs. */
function fullyConnectedChain() {
  const tensor = float32Tensor;
  const weights = Array.from({ length: 64 }, (_, i) => ((i % 5) - 2) * 0.1);
  return {
    operands: [
      tensor([1, 8], "MODEL_INPUT"), // 0
      tensor([8, 8], "CONSTANT_COPY", weights), // 1
      tensor([8], "CONSTANT_COPY", [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]), // 2
      int32Scalar(0), // 3: no activation
      tensor([1, 8], "TEMPORARY_VARIABLE"), // 4
      tensor([1, 8], "TEMPORARY_VARIABLE"), // 5
      tensor([1, 8], "MODEL_OUTPUT"), // 6
    ],
    operations: [
      { type: "FULLY_CONNECTED", inputs: [0, 1, 2, 3], outputs: [4] },
      { type: "FULLY_CONNECTED", inputs: [4, 1, 2, 3], outputs: [5] },
      { type: "FULLY_CONNECTED", inputs: [5, 1, 2, 3], outputs: [6] },
    ],
    inputIndexes: [0],
    outputIndexes: [6],
  };
}

Deno.test("SUSTAINED_SPEED gets the latency plan: devices sharing the cores are not balanced", async () => {
  // cpu-reference at half cpu-simd's speed: spreading the chain over both would lower the
  // busiest device's load, but one executor runs the steps one after the other on the same
  // cores, so that only adds a slower step (NNAPI picks by execTime for both preferences).
  const deviceCosts = {
    "cpu-simd": { microsPerWork: 1 },
    "cpu-reference": { microsPerWork: 2 },
  };
  await withTestServer({ ...HOST_ONLY, deviceCosts }, async (server) => {
    const model = await server.request("POST", "/v1/models", fullyConnectedChain());
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const plans: Record<string, PlanJson> = {};
    for (const preference of ["FAST_SINGLE_ANSWER", "SUSTAINED_SPEED", "LOW_POWER"]) {
      const created = await server.request("POST", "/v1/compilations", {
        model: model.body.id,
        preference,
      });
      strictEqual(created.status, 201, JSON.stringify(created.body));
      plans[preference] = created.body.plan as PlanJson;
    }
    const fast = plans.FAST_SINGLE_ANSWER;
    deepStrictEqual(fast.steps.map((s) => [s.device, s.operations]), [["cpu-simd", [0, 1, 2]]]);
    strictEqual(fast.objective, "latency");
    deepStrictEqual(plans.SUSTAINED_SPEED, fast);
    deepStrictEqual(plans.LOW_POWER, fast);
  });
});

Deno.test("devices report measured capabilities relative to the reference CPU", async () => {
  await withTestServer({}, async (server) => {
    const { body } = await server.request("GET", "/v1/devices");
    const devices = body.devices as {
      name: string;
      capabilities: { operandPerformance: Record<string, { execTime: number }> };
    }[];
    const float32 = (name: string) =>
      devices.find((d) => d.name === name)!.capabilities.operandPerformance.TENSOR_FLOAT32;
    strictEqual(float32("cpu-reference").execTime, 1);
    const simd = float32("cpu-simd").execTime;
    ok(simd > 0 && simd < 1, `cpu-simd measured at ${simd} of the reference's time`);
  });
});

Deno.test("profile-guided partitioning times the model on each device; the profiled plan is cached", async () => {
  // The host devices: of them, only cpu-reference runs RELU and SOFTMAX (onnxruntime does too).
  await withTestServer(HOST_ONLY, async (server) => {
    const model = await server.request("POST", "/v1/models", alternatingModel());
    const token = new Uint8Array(32).fill(7).toBase64();
    const request = { model: model.body.id, partitioning: "profile", cache: { token } };
    const profiled = await server.request("POST", "/v1/compilations", request);
    strictEqual(profiled.status, 201, JSON.stringify(profiled.body));
    strictEqual(profiled.body.cache, "miss");
    const plan = profiled.body.plan as PlanJson & { costs: string };
    strictEqual(plan.costs, "profile");
    deepStrictEqual(plan.steps.flatMap((s) => s.operations).sort(), [0, 1, 2, 3]);
    ok(plan.steps.every((s) => s.estimatedCost > 0), JSON.stringify(plan.steps));
    // Only cpu-reference runs RELU and SOFTMAX, whatever the measurements say (they may also
    // put the tiny FULLY_CONNECTED between them there, joining the two in one step).
    const withReluOrSoftmax = plan.steps.filter((s) =>
      s.operations.some((k) => k === 1 || k === 3)
    );
    ok(withReluOrSoftmax.length > 0, JSON.stringify(plan.steps));
    deepStrictEqual(
      [...new Set(withReluOrSoftmax.map((s) => s.device))],
      ["cpu-reference"],
      JSON.stringify(plan.steps),
    );
    const reference = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    const want = await outputsOf(server, reference.body.id as string);
    const got = await outputsOf(server, profiled.body.id as string);
    got.forEach((v, i) => ok(Math.abs(v - want[i]) <= 1e-5, `output ${i}: ${v} vs ${want[i]}`));
    // The same request again: the profiled plan comes from the cache, unchanged.
    const cached = await server.request("POST", "/v1/compilations", request);
    strictEqual(cached.body.cache, "hit");
    deepStrictEqual(cached.body.plan, plan);
    // Static partitioning is another cache entry.
    const estimated = await server.request("POST", "/v1/compilations", {
      ...request,
      partitioning: "static",
    });
    strictEqual(estimated.body.cache, "miss");
    strictEqual((estimated.body.plan as { costs: string }).costs, "static");
  });
});

Deno.test("profile-guided partitioning of a model whose extents are given at execution probes representative ones, or falls back to static costs where the model does not take them", async () => {
  await withTestServer({}, async (server) => {
    const filter = Array.from({ length: 4 * 9 * 3 }, (_, i) => ((i % 7) - 3) / 8);
    const conv = await server.request("POST", "/v1/models", {
      operands: [
        float32Tensor([0, 0, 0, 3], "MODEL_INPUT"),
        float32Tensor([4, 3, 3, 3], "CONSTANT_COPY", filter),
        float32Tensor([4], "CONSTANT_COPY", [0, 0.5, 1, 1.5]),
        int32Scalar(1),
        int32Scalar(1),
        int32Scalar(0),
        float32Tensor([0, 0, 0, 4], "TEMPORARY_VARIABLE"),
        float32Tensor([0, 0, 0, 4], "MODEL_OUTPUT"),
      ],
      operations: [
        { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
        { type: "RELU", inputs: [6], outputs: [7] },
      ],
      inputIndexes: [0],
      outputIndexes: [7],
    });
    strictEqual(conv.status, 201, JSON.stringify(conv.body));
    const profiled = await server.request("POST", "/v1/compilations", {
      model: conv.body.id,
      partitioning: "profile",
    });
    strictEqual(profiled.status, 201, JSON.stringify(profiled.body));
    strictEqual((profiled.body.plan as { costs: string }).costs, "profile");
    // [?, ?] reshaped to [2, 3]: representative extents (1 x 64) are not six elements.
    const reshape = await server.request("POST", "/v1/models", {
      operands: [
        float32Tensor([0, 0], "MODEL_INPUT"),
        { type: "TENSOR_INT32", dimensions: [2], lifetime: "CONSTANT_COPY", value: [2, 3] },
        float32Tensor([2, 3], "TEMPORARY_VARIABLE"),
        float32Tensor([2, 3], "MODEL_OUTPUT"),
      ],
      operations: [
        { type: "RESHAPE", inputs: [0, 1], outputs: [2] },
        { type: "RELU", inputs: [2], outputs: [3] },
      ],
      inputIndexes: [0],
      outputIndexes: [3],
    });
    strictEqual(reshape.status, 201, JSON.stringify(reshape.body));
    const fallen = await server.request("POST", "/v1/compilations", {
      model: reshape.body.id,
      partitioning: "profile",
    });
    strictEqual(fallen.status, 201, JSON.stringify(fallen.body));
    strictEqual((fallen.body.plan as { costs: string }).costs, "static");
  });
});
