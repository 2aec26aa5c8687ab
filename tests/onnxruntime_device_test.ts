/**
 * The onnxruntime device (#31): listed where onnxruntime-node loads, placed by the
 * partitioner on the steps the exporter writes, its runs of steps executed as onnxruntime
 * sessions in the executors, other steps (ELU here, which it does not claim) on the host
 * between them; the results are the reference kernels'. Its plans take memory pools,
 * deadlines and bursts like any other.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { importOnnx, startTestServer, withTestServer } from "./server_fixture.ts";
import { ONNXRUNTIME_FOR_EVERY_STEP } from "./onnxruntime_fixture.ts";
import { NnClient } from "../client/mod.ts";
import { OutputTail } from "./output_tail.ts";
import { cacheToken, compile, CONV_INPUT, register, run } from "./cache_fixture.ts";
import { onnxruntimeRuntime } from "../driver/devices/onnxruntime/device.ts";
import { float32Operand, int32Operand } from "../driver/devices/device.ts";
import type { TensorData } from "../nnapi/tensor.ts";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { weights } from "./onnx/compare.ts";
import { seededFloats } from "../kernels/seeded_random.ts";

/** conv -> relu -> elu -> conv -> global average pool -> gemm: ELU splits two onnxruntime runs. */
const MODEL = onnxBytes({
  inputs: [{ name: "x", dims: [1, 3, 12, 12] }],
  outputs: [{ name: "y", dims: [1, 5] }],
  nodes: [
    { op: "Conv", inputs: ["x", "w1", "b1"], outputs: ["c1"], attributes: { pads: [1, 1, 1, 1] } },
    { op: "Relu", inputs: ["c1"], outputs: ["r1"] },
    { op: "Sub", inputs: ["r1", "half"], outputs: ["s1"] },
    { op: "Elu", inputs: ["s1"], outputs: ["a1"], attributes: { alpha: { float: 0.7 } } },
    {
      op: "Conv",
      inputs: ["a1", "w2", "b2"],
      outputs: ["c2"],
      attributes: { pads: [1, 1, 1, 1], strides: [2, 2] },
    },
    { op: "GlobalAveragePool", inputs: ["c2"], outputs: ["p"] },
    { op: "Flatten", inputs: ["p"], outputs: ["f"] },
    { op: "Gemm", inputs: ["f", "w3", "b3"], outputs: ["y"], attributes: { transB: 1 } },
  ],
  initializers: [
    weights("w1", [8, 3, 3, 3], 1),
    weights("b1", [8], 2),
    { name: "half", dims: [1], values: [0.5] },
    weights("w2", [6, 8, 3, 3], 3),
    weights("b2", [6], 4),
    weights("w3", [5, 6], 5),
    weights("b3", [5], 6),
  ],
  opset: 13,
});

Deno.test("the onnxruntime device runs the steps it claims, the host the others between, as the reference does", async () => {
  await withTestServer({ deviceCosts: ONNXRUNTIME_FOR_EVERY_STEP }, async (server) => {
    const devices = await server.request("GET", "/v1/devices");
    const names = (devices.body.devices as { name: string }[]).map((d) => d.name);
    ok(names.includes("onnxruntime"), names.join());

    const model = await importOnnx(server, MODEL);
    const input = Array.from(seededFloats(3 * 144, 9, 2));
    const run = async (deviceNames: string[]) => {
      const compiled = await server.request("POST", "/v1/compilations", {
        model: model.id,
        devices: deviceNames,
      });
      strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
      const executed = await server.request(
        "POST",
        `/v1/compilations/${compiled.body.id}/executions`,
        { inputs: [{ data: input }], measureTiming: true },
      );
      strictEqual(executed.status, 200, JSON.stringify(executed.body));
      // Each step ran where the plan put it: no run fell back to the reference kernels.
      const timing = executed.body.timing as { steps: { device: string; fallback?: string }[] };
      const timed = timing.steps;
      deepStrictEqual(timed.filter((s) => s.fallback), [], JSON.stringify(timed));
      const plan = compiled.body.plan as { steps: { device: string; operations: number[] }[] };
      return { plan, timed, output: (executed.body.outputs as { data: number[] }[])[0].data };
    };
    const reference = await run(["cpu-reference"]);
    const mixed = await run(["onnxruntime", "cpu-reference"]);
    const onOrt = mixed.plan.steps.filter((s) => s.device === "onnxruntime");
    ok(onOrt.length >= 2, JSON.stringify(mixed.plan.steps.map((s) => s.device)));
    ok(mixed.timed.some((s) => s.device === "onnxruntime"), JSON.stringify(mixed.timed));
    ok(mixed.plan.steps.some((s) => s.device === "cpu-reference"), "ELU on the host");
    deepStrictEqual(mixed.output.length, 5);
    mixed.output.forEach((v, i) =>
      ok(Math.abs(v - reference.output[i]) < 1e-4, `[${i}]: ${v} vs ${reference.output[i]}`)
    );
  });
});

Deno.test("plans on the onnxruntime device take memory pools, deadlines, driver-managed buffers and bursts", async () => {
  const server = await startTestServer();
  try {
    const client = new NnClient({ baseUrl: server.url });
    const model = client.model();
    const a = model.addOperand({ type: "TENSOR_FLOAT32", dimensions: [4] });
    const b = model.addOperand({ type: "TENSOR_FLOAT32", dimensions: [4] });
    const act = model.addOperand({ type: "INT32" });
    const out = model.addOperand({ type: "TENSOR_FLOAT32", dimensions: [4] });
    model.setOperandValue(act, 3); // RELU6
    model.addOperation("ADD", [a, b, act], [out]);
    model.identifyInputsAndOutputs([a, b], [out]);
    const compilation = await client.compile(model, { devices: ["onnxruntime"] });
    const described = await server.request("GET", `/v1/compilations/${compilation.id}`);
    const plan = described.body.plan as { steps: { device: string }[] };
    deepStrictEqual(plan.steps.map((s) => s.device), ["onnxruntime"]);
    const want = [0, 6, 3.5, 6];

    // The first input from a memory pool, the output into another, under a deadline.
    const input = await client.createMemory(new Uint8Array(Float32Array.of(-1, 5, 1.5, 9).buffer));
    const output = await client.createMemory({ size: 16 });
    const result = await compilation.execution()
      .setInputFromMemory(0, input, 0, 16)
      .setInput(1, [0, 2, 2, 0])
      .setOutputFromMemory(0, output, 0, 16)
      .setDeadline(60_000)
      .setMeasureTiming(true)
      .compute();
    const timed = result.timing?.steps as { device: string; fallback?: string }[];
    deepStrictEqual(timed.map((s) => [s.device, s.fallback]), [["onnxruntime", undefined]]);
    deepStrictEqual([...new Float32Array((await output.read()).slice().buffer)], want);

    // A driver-managed buffer: the output kept in the service, then fed back as input 0.
    const buffer = await compilation.allocateBuffer({
      roles: [{ io: "output", index: 0 }, { io: "input", index: 0 }],
    });
    await compilation.execution().setInput(0, [-1, 5, 1.5, 9]).setInput(1, [0, 2, 2, 0])
      .setOutputFromBuffer(0, buffer).compute();
    const again = await compilation.execution().setInputFromBuffer(0, buffer)
      .setInput(1, [1, -7, 0, 0]).compute();
    deepStrictEqual([...again.outputs[0].data as Float32Array], [1, 0, 3.5, 6]);

    // A burst: several requests in flight on one socket.
    await using burst = await compilation.burst();
    const answers = await Promise.all(
      [0, 1, 2].map((k) => burst.compute([[-1, 5, 1.5, 9], [k, 2, 2, 0]])),
    );
    answers.forEach((answer, k) =>
      deepStrictEqual([...answer.outputs[0].data as Float32Array], [Math.max(k - 1, 0), 6, 3.5, 6])
    );
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
});

Deno.test("where onnxruntime-node cannot load, the service starts without the device and says so once", async () => {
  // A broken install: the package's import throws, as a platform without its binary does.
  const config = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
  const importMap = await Deno.makeTempFile({ suffix: ".json" });
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  await Deno.writeTextFile(
    importMap,
    JSON.stringify({
      imports: {
        ...config.imports,
        "onnxruntime-node":
          "data:text/javascript,throw new Error('no prebuilt binary for this platform');",
      },
    }),
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `--import-map=${importMap}`, "main.ts"],
    cwd: new URL("../", import.meta.url),
    env: {
      NNSERVE_DATA_DIR: dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      NNSERVE_GPU: "0",
      NNSERVE_WORKERS: "1",
      NO_COLOR: "1",
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = new OutputTail(child.stdout);
  let stderr = "";
  try {
    const line = await output.waitFor(/listening on http:\S+/, { timeoutMs: 30_000 });
    const url = /listening on (http:\S+)/.exec(line.text)![1];
    const devices = await (await fetch(`${url}/v1/devices`)).json();
    deepStrictEqual(devices.devices.map((d: { name: string }) => d.name), [
      "cpu-simd",
      "cpu-reference",
    ]);
    // It still serves: a model compiles and runs on the host devices.
    const client = new NnClient({ baseUrl: url });
    const model = client.model();
    const a = model.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    const act = model.addOperand({ type: "INT32" });
    const out = model.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    model.setOperandValue(act, 0);
    model.addOperation("ADD", [a, a, act], [out]);
    model.identifyInputsAndOutputs([a], [out]);
    const compilation = await client.compile(model);
    const result = await compilation.execution().setInput(0, [1, 2]).compute();
    deepStrictEqual([...result.outputs[0].data as Float32Array], [2, 4]);
  } finally {
    child.kill("SIGKILL");
    await child.status;
    await output.done;
    stderr = new TextDecoder().decode(
      new Uint8Array(await new Response(child.stderr).arrayBuffer()),
    );
    await Deno.remove(dataDir, { recursive: true });
    await Deno.remove(importMap);
  }
  const said = stderr.split("\n").filter((l) => l.includes("onnxruntime-node does not load"));
  strictEqual(said.length, 1, stderr);
  ok(said[0].includes("no prebuilt binary for this platform"), said[0]);
});

Deno.test("a unit's artifact (onnxruntime's optimized model) rebuilds its sessions without exporting, and lives in the compilation cache", async () => {
  // A 3x3 convolution and a RELU6 ADD: prepared once leaving an artifact, then from the
  // artifact with the filter's values zeroed: an export would compute zeros, the artifact
  // what the first preparation computes.
  const [f32, int] = [float32Operand, int32Operand];
  const operands = [
    f32([1, 6, 6, 2]),
    f32([3, 3, 3, 2], seededFloats(54, 1, 2)),
    f32([3], seededFloats(3, 2, 2)),
    int(1),
    int(1),
    int(0),
    f32([1, 6, 6, 3]),
    int(3),
    f32([1, 6, 6, 3]),
  ];
  const steps = [
    { type: "CONV_2D" as const, inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
    { type: "ADD" as const, inputs: [6, 6, 7], outputs: [8] },
  ];
  const needed = new Set([8]);
  const first = await onnxruntimeRuntime.prepare(steps, { operands, needed, keepArtifact: true });
  ok(first.artifact && first.artifact.byteLength > 0, "an artifact is left");
  const blind = operands.map((o, i) => i === 1 ? { ...o, value: new Float32Array(54) } : o);
  const again = await onnxruntimeRuntime.prepare(steps, {
    operands: blind,
    needed,
    artifact: first.artifact,
  });
  const input = new Map([[0, seededFloats(72, 3, 2) as TensorData]]);
  const want = (await first.run(input)).get(8)!;
  ok([...want as Float32Array].some((v) => v !== 0), "the first preparation computes no zeros");
  deepStrictEqual((await again.run(input)).get(8), want);
  first.destroy();
  again.destroy();

  // Through the service: the artifact is saved with the plan and a restart's hit runs on it.
  // Costs that put the small convolution on onnxruntime (measured, its fixed cost would not).
  const placed = {
    devices: ["onnxruntime", "cpu-reference"],
    deviceCosts: ONNXRUNTIME_FOR_EVERY_STEP,
  };
  const server = await startTestServer(placed);
  let dataDir = server.dataDir;
  let expected: number[];
  try {
    const model = await register(server);
    const miss = await compile(server, model, cacheToken(3));
    strictEqual(miss.cache, "miss");
    expected = await run(server, miss.id);
    const files = [...Deno.readDirSync(`${dataDir}/cache`)].filter((e) =>
      e.name.endsWith(".model")
    );
    strictEqual(files.length, 1);
    const cached = Deno.readFileSync(`${dataDir}/cache/${files[0].name}`);
    const header = new DataView(cached.buffer).getUint32(0, true);
    ok(cached.byteLength > 4 + header, "the model cache carries the unit's artifact");
  } finally {
    await server.close();
  }
  const restarted = await startTestServer({ dataDir, ...placed });
  dataDir = restarted.dataDir;
  try {
    const model = await register(restarted);
    const hit = await compile(restarted, model, cacheToken(3));
    strictEqual(hit.cache, "hit");
    const executed = await restarted.request("POST", `/v1/compilations/${hit.id}/executions`, {
      inputs: [{ data: CONV_INPUT }],
      measureTiming: true,
    });
    strictEqual(executed.status, 200, JSON.stringify(executed.body));
    const timed = (executed.body.timing as { steps: { device: string; fallback?: string }[] })
      .steps;
    deepStrictEqual(timed.map((s) => [s.device, s.fallback]), [["onnxruntime", undefined]]);
    deepStrictEqual((executed.body.outputs as { data: number[] }[])[0].data, expected);
  } finally {
    await restarted.close();
    await Deno.remove(dataDir, { recursive: true });
  }
});
