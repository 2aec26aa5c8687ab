/**
 * The gpu device through the service (WebGPU; Mesa's llvmpipe adapter here, installed by
 * .ci/run): listed with measured capabilities, partitioned against the host devices by cost
 * (forced onto it with test costs, since its measured costs rightly keep it out of plans on
 * this machine), run on it for real (timing names the device that ran each step), batched
 * there as on any device, and kept out where moving tensors to it would cost more than it saves.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  batchRuns,
  float32Tensor,
  int32Scalar,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";

/**
 * CONV_2D -> FLOOR -> CONV_2D -> FLOOR: the convolutions run on the gpu, FLOOR does not.
 * `extents` is the shape of every tensor (0: known only at execution).
 */
function convFloorModel(extents = [1, 6, 6, 2]) {
  const tensor = float32Tensor;
  const ramp = (n: number, scale: number) =>
    Array.from({ length: n }, (_, i) => ((i % 5) - 2) * scale);
  const operands = [
    tensor(extents, "MODEL_INPUT"), // 0
    tensor([2, 3, 3, 2], "CONSTANT_COPY", ramp(36, 0.25)), // 1
    tensor([2], "CONSTANT_COPY", [0.5, -0.5]), // 2
    int32Scalar(1), // 3: SAME
    int32Scalar(1), // 4: stride 1
    int32Scalar(0), // 5: no activation
    tensor(extents, "TEMPORARY_VARIABLE"), // 6
    tensor(extents, "TEMPORARY_VARIABLE"), // 7
    tensor(extents, "TEMPORARY_VARIABLE"), // 8
    tensor(extents, "MODEL_OUTPUT"), // 9
  ];
  return {
    operands,
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
      { type: "FLOOR", inputs: [6], outputs: [7] },
      { type: "CONV_2D", inputs: [7, 1, 2, 3, 4, 4, 5], outputs: [8] },
      { type: "FLOOR", inputs: [8], outputs: [9] },
    ],
    inputIndexes: [0],
    outputIndexes: [9],
  };
}

const INPUT = Array.from({ length: 72 }, (_, i) => Math.cos(i) * 3);

interface PlanJson {
  estimatedCost: number;
  switches: number;
  steps: {
    device: string;
    operations: number[];
    transfers: unknown[];
    estimatedCost: number;
    binds: string;
  }[];
}

async function execute(
  server: TestServer,
  compilation: string,
  input: { data: number[]; dimensions?: number[] } = { data: INPUT },
) {
  const result = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [input],
    measureTiming: true,
  });
  strictEqual(result.status, 200, JSON.stringify(result.body));
  const outputs = result.body.outputs as { data: number[] }[];
  const timing = result.body.timing as { steps: { device: string; operations: number[] }[] };
  return { data: outputs[0].data, steps: timing.steps };
}

/** Costs that make the gpu the cheapest device for what it runs, and transfers free. */
const GPU_FIRST = {
  gpu: { microsPerWork: 1e-9, transfer: { fixedMicros: 0, microsPerByte: 0 } },
  // onnxruntime claims these steps too; its measured speed (at start, on a machine that may be
  // busy) must not decide the plans these tests are about.
  onnxruntime: { microsPerWork: 1 },
};

Deno.test("GET /v1/devices lists the gpu beside the CPUs, with measured capabilities", async () => {
  await withTestServer({ gpu: true }, async (server) => {
    const { body } = await server.request("GET", "/v1/devices");
    const devices = body.devices as {
      name: string;
      type: string;
      capabilities: { operandPerformance: Record<string, { execTime: number }> };
      supportedOperations: string[];
    }[];
    const gpu = devices.find((d) => d.name === "gpu");
    ok(
      gpu,
      `no gpu device in ${devices.map((d) => d.name)}: WebGPU found no adapter ` +
        "(Debian's libegl-mesa0 and libgl1-mesa-dri provide llvmpipe; .ci/run installs them)",
    );
    deepStrictEqual(devices.map((d) => d.name), [
      "cpu-simd",
      "cpu-reference",
      "onnxruntime",
      "gpu",
    ]);
    strictEqual(gpu.type, "GPU");
    ok(gpu.capabilities.operandPerformance.TENSOR_FLOAT32.execTime > 0);
    ok(gpu.supportedOperations.includes("CONV_2D"));
  });
});

Deno.test("operations alternate between the gpu and a CPU and give the reference's results", async () => {
  await withTestServer({ gpu: true, deviceCosts: GPU_FIRST }, async (server) => {
    const model = await server.request("POST", "/v1/models", convFloorModel());
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const mixed = await server.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(mixed.status, 201, JSON.stringify(mixed.body));
    const plan = mixed.body.plan as PlanJson;
    deepStrictEqual(plan.steps.map((s) => [s.device, s.operations]), [
      ["gpu", [0]],
      ["cpu-reference", [1]],
      ["gpu", [2]],
      ["cpu-reference", [3]],
    ]);
    const reference = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    const want = await execute(server, reference.body.id as string);
    for (let run = 0; run < 2; run++) {
      const got = await execute(server, mixed.body.id as string);
      // The steps ran where the plan put them: the gpu did not fall back.
      deepStrictEqual(got.steps.map((s) => [s.device, s.operations]), [
        ["gpu", [0]],
        ["cpu-reference", [1]],
        ["gpu", [2]],
        ["cpu-reference", [3]],
      ]);
      got.data.forEach((v, i) =>
        ok(Math.abs(v - want.data[i]) <= 1e-4, `output ${i}: ${v} vs ${want.data[i]}`)
      );
    }
  });
});

Deno.test("extents given at execution: the gpu prepares its steps per shape and gives the reference's results", async () => {
  await withTestServer({ gpu: true, deviceCosts: GPU_FIRST }, async (server) => {
    const model = await server.request("POST", "/v1/models", convFloorModel([0, 0, 0, 2]));
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const mixed = await server.request("POST", "/v1/compilations", { model: model.body.id });
    strictEqual(mixed.status, 201, JSON.stringify(mixed.body));
    const plan = mixed.body.plan as PlanJson;
    deepStrictEqual(plan.steps.map((s) => [s.device, s.operations, s.binds]), [
      ["gpu", [0], "per shape"],
      ["cpu-reference", [1], "per shape"],
      ["gpu", [2], "per shape"],
      ["cpu-reference", [3], "per shape"],
    ]);
    const reference = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    for (const dimensions of [[1, 6, 6, 2], [2, 3, 4, 2], [1, 6, 6, 2]]) {
      const count = dimensions.reduce((a, b) => a * b, 1);
      const input = { data: Array.from({ length: count }, (_, i) => Math.cos(i) * 3), dimensions };
      const want = await execute(server, reference.body.id as string, input);
      const got = await execute(server, mixed.body.id as string, input);
      deepStrictEqual(got.steps.map((s) => s.device), [
        "gpu",
        "cpu-reference",
        "gpu",
        "cpu-reference",
      ]);
      got.data.forEach((v, i) =>
        ok(
          Math.abs(v - want.data[i]) <= 1e-4,
          `${dimensions}: output ${i}: ${v} vs ${want.data[i]}`,
        )
      );
    }
  });
});

Deno.test("the partitioner keeps islands off the gpu when moving tensors costs more than it saves", async () => {
  const devices = ["gpu", "cpu-reference"];
  // Free transfers: every convolution goes to the gpu, as a per-operation choice would.
  let naive: PlanJson | undefined;
  await withTestServer({ gpu: true, deviceCosts: GPU_FIRST }, async (server) => {
    const model = await server.request("POST", "/v1/models", convFloorModel());
    const compiled = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices,
    });
    naive = compiled.body.plan as PlanJson;
  });
  strictEqual(naive!.switches, 3);
  const moves = naive!.steps.reduce((n, s) => n + s.transfers.length, 0);
  ok(moves >= 4, `${moves} transfers`);
  // Moves of 1 ms each: the gpu islands would cost more than they save.
  const fixedMicros = 1_000;
  const transfer = { fixedMicros, microsPerByte: 0 };
  await withTestServer(
    { gpu: true, deviceCosts: { gpu: { microsPerWork: 1e-9, transfer } } },
    async (server) => {
      const model = await server.request("POST", "/v1/models", convFloorModel());
      const compiled = await server.request("POST", "/v1/compilations", {
        model: model.body.id,
        devices,
      });
      strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
      const plan = compiled.body.plan as PlanJson;
      deepStrictEqual(plan.steps.map((s) => [s.device, s.operations]), [
        ["cpu-reference", [0, 1, 2, 3]],
      ]);
      strictEqual(plan.switches, 0);
      const naiveCost = naive!.estimatedCost + moves * fixedMicros;
      ok(
        plan.estimatedCost < naiveCost,
        `the partitioned plan costs ${plan.estimatedCost} µs, the per-operation one ${naiveCost}`,
      );
    },
  );
});

/** Six CONV_2D in a chain: every step runs on the gpu and on both CPUs. */
function convChainModel() {
  const { operands, operations } = convFloorModel();
  const layers = 6;
  return {
    operands: [
      ...operands.slice(0, 6),
      ...Array.from(
        { length: layers },
        (_, i) =>
          float32Tensor([1, 6, 6, 2], i === layers - 1 ? "MODEL_OUTPUT" : "TEMPORARY_VARIABLE"),
      ),
    ],
    operations: Array.from({ length: layers }, (_, i) => ({
      ...operations[0],
      inputs: [i === 0 ? 0 : 5 + i, 1, 2, 3, 4, 4, 5],
      outputs: [6 + i],
    })),
    inputIndexes: [0],
    outputIndexes: [6 + layers - 1],
  };
}

Deno.test("SUSTAINED_SPEED runs where FAST_SINGLE_ANSWER does, not spread over gpu and CPUs", async () => {
  // The gpu fastest, cpu-simd next, cpu-reference slowest, transfers free: spreading the
  // chain over the three would lower the busiest device's load, but the steps run one after
  // the other (the MobileNetV2 plan alternated all three, 4-6x slower).
  const free = { fixedMicros: 0, microsPerByte: 0 };
  const deviceCosts = {
    gpu: { microsPerWork: 1e-3, transfer: free },
    "cpu-simd": { microsPerWork: 2e-3 },
    "cpu-reference": { microsPerWork: 4e-3 },
    onnxruntime: { microsPerWork: 8e-3 },
  };
  await withTestServer({ gpu: true, deviceCosts }, async (server) => {
    const model = await server.request("POST", "/v1/models", convChainModel());
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const compile = async (preference: string) => {
      const created = await server.request("POST", "/v1/compilations", {
        model: model.body.id,
        preference,
      });
      strictEqual(created.status, 201, JSON.stringify(created.body));
      return created.body.plan as PlanJson;
    };
    const fast = await compile("FAST_SINGLE_ANSWER");
    deepStrictEqual(fast.steps.map((s) => [s.device, s.operations]), [
      ["gpu", [0, 1, 2, 3, 4, 5]],
    ]);
    deepStrictEqual(await compile("SUSTAINED_SPEED"), fast);
  });
});

Deno.test("profile-guided partitioning times the gpu too, and its plan computes the same", async () => {
  await withTestServer({ gpu: true }, async (server) => {
    const model = await server.request("POST", "/v1/models", convFloorModel());
    const profiled = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      partitioning: "profile",
    });
    strictEqual(profiled.status, 201, JSON.stringify(profiled.body));
    const plan = profiled.body.plan as PlanJson & { costs: string };
    strictEqual(plan.costs, "profile");
    deepStrictEqual(plan.steps.flatMap((s) => s.operations).sort(), [0, 1, 2, 3]);
    const reference = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
      devices: ["cpu-reference"],
    });
    const want = await execute(server, reference.body.id as string);
    const got = await execute(server, profiled.body.id as string);
    got.data.forEach((v, i) =>
      ok(Math.abs(v - want.data[i]) <= 1e-4, `output ${i}: ${v} vs ${want.data[i]}`)
    );
  });
});

Deno.test("batched executions run on the gpu as one run and answer what they answer unbatched", async () => {
  await withTestServer({ gpu: true, deviceCosts: GPU_FIRST }, async (server) => {
    // The batch extent open, the others fixed: executions of one image each stack into one run.
    const model = await server.request("POST", "/v1/models", convFloorModel([0, 6, 6, 2]));
    strictEqual(model.status, 201, JSON.stringify(model.body));
    const compile = async (batching?: unknown) => {
      const created = await server.request("POST", "/v1/compilations", {
        model: model.body.id,
        ...(batching ? { batching } : {}),
      });
      strictEqual(created.status, 201, JSON.stringify(created.body));
      return created.body.id as string;
    };
    const plain = await compile();
    // A batch forms only by reaching its size (the oldest could wait 10 s), never by timing.
    const batched = await compile({ maxBatchSize: 3, maxQueueDelayUs: 10_000_000 });
    const images = [0, 1, 2].map((k) => ({
      data: INPUT.map((v, i) => v + k * Math.sin(i)),
      dimensions: [1, 6, 6, 2],
    }));
    const together = await Promise.all(images.map((image) => execute(server, batched, image)));
    for (const [k, image] of images.entries()) {
      const alone = await execute(server, plain, image);
      deepStrictEqual(together[k].data, alone.data, `image ${k}`);
      // The batched run's steps ran where the plan put them: the convolutions on the gpu.
      deepStrictEqual(together[k].steps.map((s) => s.device), [
        "gpu",
        "cpu-reference",
        "gpu",
        "cpu-reference",
      ]);
    }
    deepStrictEqual(await batchRuns(server), { runs: 1, rows: 3 });
  });
});
