/**
 * The device seam over HTTP: the devices listed, support answered per device, compilations
 * restricted to devices (NNAPI `createForDevices`), and a model whose operations only some
 * devices run split across them with the same results as the reference device alone.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { int32Scalar, type TestServer, withTestServer } from "./server_fixture.ts";

/** FULLY_CONNECTED (constant weights) -> SOFTMAX: only the first runs on cpu-simd. */
function fullyConnectedSoftmax() {
  const tensor = (dimensions: number[], lifetime: string, value?: number[]) => ({
    type: "TENSOR_FLOAT32",
    dimensions,
    scale: 0,
    zeroPoint: 0,
    lifetime,
    ...(value ? { value } : {}),
  });
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

Deno.test("GET /v1/devices lists the SIMD and the reference CPU", async () => {
  await withTestServer({}, async (server) => {
    const { body } = await server.request("GET", "/v1/devices");
    const devices = body.devices as { name: string; type: string; version: string }[];
    deepStrictEqual(devices.map((d) => [d.name, d.type]), [
      ["cpu-simd", "CPU"],
      ["cpu-reference", "CPU"],
    ]);
    ok(devices.every((d) => /^\d+\.\d+\.\d+$/.test(d.version)));
  });
});

Deno.test("supported-operations answers per device, and compilations keep to their devices", async () => {
  await withTestServer({}, async (server) => {
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
