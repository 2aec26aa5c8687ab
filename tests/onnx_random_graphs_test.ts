/**
 * Graph-level differential test: random ONNX graphs of the motifs published vision models use
 * (`tests/onnx/random_graphs.ts`), imported as they are and run on every device and on
 * partitions that mix them (the reference kernels alone, the SIMD kernels, the
 * gpu on Mesa's llvmpipe with test costs that place it first, and partitions that mix all
 * three), each compared with onnxruntime-node. What single-operation tests cannot
 * see shows here: buffer planning across a whole graph, fused runs, values that live long.
 */
import { ok, strictEqual } from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { seededFloats } from "../kernels/seeded_random.ts";
import { assertClose, onnxBytes } from "../tools/onnx_graphs.ts";
import { randomGraph } from "./onnx/random_graphs.ts";
import { type JsonOutput, type TestServer, withTestServer } from "./server_fixture.ts";

/** How many graphs; each runs on every configuration below. */
const GRAPHS = 40;

/** The gpu first wherever it is allowed (its measured costs keep it out on this machine). */
const GPU_FIRST = {
  gpu: { microsPerWork: 1e-9, transfer: { fixedMicros: 0, microsPerByte: 0 } },
};

/** The compilations every graph runs on. */
const CONFIGURATIONS = [
  { devices: ["cpu-reference"] },
  { devices: ["cpu-simd", "cpu-reference"] },
  { devices: ["gpu", "cpu-reference"] },
  { devices: ["gpu", "cpu-simd", "cpu-reference"] },
];

/** One graph through nnserve on every configuration, against onnxruntime. */
async function check(server: TestServer, seed: number, devicesSeen: Set<string>) {
  const spec = randomGraph(seed);
  const what = `graph ${seed} (${spec.what.join(", ")})`;
  const bytes = onnxBytes(spec);
  const [input] = spec.inputs;
  const dims = input.dims as number[];
  const data = seededFloats(dims.reduce((a, b) => a * b, 1), seed, 2);
  const session = await ort.InferenceSession.create(bytes);
  const expected = await session.run({ [input.name]: new ort.Tensor("float32", data, dims) });
  await session.release();
  const imported = await fetch(`${server.url}/v1/models`, {
    method: "POST",
    headers: { "content-type": "application/onnx" },
    body: new Uint8Array(bytes),
  });
  const model = await imported.json();
  strictEqual(imported.status, 201, `${what}: ${JSON.stringify(model)}`);
  for (const configuration of CONFIGURATIONS) {
    const where = `${what} on ${JSON.stringify(configuration)}`;
    const compiled = await server.request("POST", "/v1/compilations", {
      model: model.id,
      ...configuration,
    });
    strictEqual(compiled.status, 201, `${where}: ${JSON.stringify(compiled.body)}`);
    const plan = compiled.body.plan as { steps: { device: string }[] };
    for (const step of plan.steps) devicesSeen.add(step.device);
    const executed = await server.request(
      "POST",
      `/v1/compilations/${compiled.body.id}/executions`,
      { inputs: { [input.name]: { dimensions: dims, data: Array.from(data) } } },
    );
    strictEqual(executed.status, 200, `${where}: ${JSON.stringify(executed.body)}`);
    const outputs = executed.body.outputs as JsonOutput[];
    spec.outputs.forEach((output, k) => {
      const want = expected[output.name] as ort.Tensor;
      assertClose(
        outputs[k].data,
        Array.from(want.data as Float32Array),
        `${where}: ${output.name}`,
      );
    });
    await server.request("DELETE", `/v1/compilations/${compiled.body.id}`);
  }
}

Deno.test(`${GRAPHS} random graphs agree with onnxruntime on every device and partition`, async () => {
  await withTestServer({ gpu: true, deviceCosts: GPU_FIRST }, async (server) => {
    const devices = await server.request("GET", "/v1/devices");
    ok(
      (devices.body.devices as { name: string }[]).some((d) => d.name === "gpu"),
      "the gpu device is there (Mesa's llvmpipe; .ci/run installs it)",
    );
    const seen = new Set<string>();
    for (let seed = 1; seed <= GRAPHS; seed++) await check(server, seed, seen);
    for (const device of ["cpu-reference", "cpu-simd", "gpu"]) {
      ok(seen.has(device), `some plan ran steps on ${device}`);
    }
  });
});
