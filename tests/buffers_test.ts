import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { addModel, startTestServer, type TestServer } from "./server_fixture.ts";

const UNITS = 4;
const INPUT = 3;

function seeded(n: number, seed: number): number[] {
  let s = seed;
  return Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return Math.fround(((s >>> 8) / 2 ** 24 - 0.5) * 0.8);
  });
}

/** RNN cell: inputs (x [1,3], h_in [1,4]); outputs (h_out [1,4], y [1,4]); tanh activation. */
function rnnModel() {
  const f32 = (dimensions: number[], lifetime: string, value?: number[]) => ({
    type: "TENSOR_FLOAT32",
    dimensions,
    lifetime,
    ...(value ? { value } : {}),
  });
  return {
    operands: [
      f32([1, INPUT], "MODEL_INPUT"),
      f32([UNITS, INPUT], "CONSTANT_COPY", seeded(UNITS * INPUT, 1)),
      f32([UNITS, UNITS], "CONSTANT_COPY", seeded(UNITS * UNITS, 2)),
      f32([UNITS], "CONSTANT_COPY", seeded(UNITS, 3)),
      f32([1, UNITS], "MODEL_INPUT"),
      { type: "INT32", dimensions: [], lifetime: "CONSTANT_COPY", value: [4] },
      f32([1, UNITS], "MODEL_OUTPUT"),
      f32([1, UNITS], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "RNN", inputs: [0, 1, 2, 3, 4, 5], outputs: [6, 7] }],
    inputIndexes: [0, 4],
    outputIndexes: [6, 7],
  };
}

async function compile(server: TestServer, model: unknown): Promise<string> {
  const registered = await server.request("POST", "/v1/models", model);
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const compilation = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
  });
  strictEqual(compilation.status, 201);
  return compilation.body.id as string;
}

async function memoryBytes(server: TestServer, id: string): Promise<Uint8Array> {
  return new Uint8Array(await (await fetch(`${server.url}/v1/memories/${id}`)).arrayBuffer());
}

Deno.test("recurrent state kept in one buffer for 100 steps equals the inline loop", async () => {
  const server = await startTestServer();
  try {
    const id = await compile(server, rnnModel());
    const steps = Array.from({ length: 100 }, (_, t) => seeded(INPUT, 100 + t));

    let state = new Array(UNITS).fill(0);
    for (const x of steps) {
      const run = await server.request("POST", `/v1/compilations/${id}/executions`, {
        inputs: [{ data: x }, { data: state }],
      });
      strictEqual(run.status, 200);
      state = (run.body.outputs as { data: number[] }[])[0].data;
    }

    const buffer = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      roles: [{ io: "input", index: 1 }, { io: "output", index: 0 }],
    });
    strictEqual(buffer.status, 201);
    deepStrictEqual(buffer.body.dimensions, [1, UNITS]);
    const token = buffer.body.token as string;
    const zeros = await server.request("POST", "/v1/memories", { size: UNITS * 4 });
    const copyIn = await server.request("POST", `/v1/buffers/${token}/copy-from`, {
      memory: zeros.body.id,
    });
    strictEqual(copyIn.status, 204);
    for (const x of steps) {
      const run = await server.request("POST", `/v1/compilations/${id}/executions`, {
        inputs: [{ data: x }, { buffer: token }],
        outputs: [{ buffer: token }, {}],
      });
      strictEqual(run.status, 200, JSON.stringify(run.body));
      deepStrictEqual((run.body.outputs as unknown[])[0], { dimensions: [1, UNITS] });
    }
    const result = await server.request("POST", "/v1/memories", { size: UNITS * 4 });
    const copyOut = await server.request("POST", `/v1/buffers/${token}/copy-to`, {
      memory: result.body.id,
    });
    strictEqual(copyOut.status, 204);
    const finalState = new Float32Array(
      (await memoryBytes(server, result.body.id as string)).buffer,
    );
    deepStrictEqual(Array.from(finalState), state);
    ok(state.some((v) => v !== 0), "the state moved");
  } finally {
    await server.close();
  }
});

Deno.test("buffers are usable only in their roles, compilation and client", async () => {
  const keys = new Map([["key-a", "alice"], ["key-b", "bob"]]);
  const server = await startTestServer({ apiKeys: keys });
  const alice = { authorization: "Bearer key-a" };
  const bob = { authorization: "Bearer key-b" };
  try {
    const model = await server.request("POST", "/v1/models", rnnModel(), alice);
    const c1 = await server.request("POST", "/v1/compilations", { model: model.body.id }, alice);
    const c2 = await server.request("POST", "/v1/compilations", { model: model.body.id }, alice);
    const id = c1.body.id as string;
    const outputOnly = await server.request(
      "POST",
      `/v1/compilations/${id}/buffers`,
      { roles: [{ io: "output", index: 0 }] },
      alice,
    );
    const token = outputOnly.body.token as string;
    const x = [0.1, 0.2, 0.3];
    const asInput = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: x }, { buffer: token }],
    }, alice);
    strictEqual(asInput.status, 400);
    match(String(asInput.body.message), /not allocated for input 1/);
    const otherCompilation = await server.request(
      "POST",
      `/v1/compilations/${c2.body.id}/executions`,
      { inputs: [{ data: x }, { data: [0, 0, 0, 0] }], outputs: [{ buffer: token }, {}] },
      alice,
    );
    strictEqual(otherCompilation.status, 400);
    const bothRoles = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      roles: [{ io: "input", index: 1 }, { io: "output", index: 0 }],
    }, alice);
    const unwritten = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: x }, { buffer: bothRoles.body.token }],
    }, alice);
    strictEqual(unwritten.status, 400);
    match(String(unwritten.body.message), /before anything wrote it/);
    const bobUses = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: x }, { buffer: bothRoles.body.token }],
    }, bob);
    strictEqual(bobUses.status, 404);
    const bobModel = await server.request("POST", "/v1/models", rnnModel(), bob);
    const bobC = await server.request("POST", "/v1/compilations", { model: bobModel.body.id }, bob);
    const bobWithAliceToken = await server.request(
      "POST",
      `/v1/compilations/${bobC.body.id}/executions`,
      { inputs: [{ data: x }, { buffer: bothRoles.body.token }] },
      bob,
    );
    strictEqual(bobWithAliceToken.status, 404);
    strictEqual(
      (await server.request("DELETE", `/v1/buffers/${bothRoles.body.token}`, undefined, bob))
        .status,
      404,
    );
    const badIndex = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      roles: [{ io: "input", index: 5 }],
    }, alice);
    strictEqual(badIndex.status, 400);
    match(String(badIndex.body.message), /no input 5/);
    const badDims = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      dimensions: [2, 4],
      roles: [{ io: "output", index: 0 }],
    }, alice);
    strictEqual(badDims.status, 400);
    match(String(badDims.body.message), /dimension 0/);
    const mixed = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      roles: [{ io: "input", index: 0 }, { io: "output", index: 0 }],
    }, alice);
    strictEqual(mixed.status, 400);
    match(String(mixed.body.message), /rank|dimension/);
    strictEqual(
      (await server.request("DELETE", `/v1/buffers/${token}`, undefined, alice)).status,
      204,
    );
  } finally {
    await server.close();
  }
});

Deno.test("a buffer with unknown dimensions takes the shape of each execution that writes it", async () => {
  const server = await startTestServer();
  try {
    const model = addModel(0) as { operands: { dimensions: number[] }[] };
    for (const operand of model.operands) {
      if (operand.dimensions.length === 1) operand.dimensions = [0];
    }
    const id = await compile(server, model);
    const buffer = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      roles: [{ io: "output", index: 0 }, { io: "input", index: 0 }],
    });
    strictEqual(buffer.status, 201);
    deepStrictEqual(buffer.body.dimensions, [0]);
    const token = buffer.body.token;
    const write3 = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: [1, 2, 3], dimensions: [3] }, { data: [1, 1, 1], dimensions: [3] }],
      outputs: [{ buffer: token }],
    });
    strictEqual(write3.status, 200, JSON.stringify(write3.body));
    deepStrictEqual(write3.body.outputs, [{ dimensions: [3] }]);
    const read3 = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ buffer: token }, { data: [10, 10, 10], dimensions: [3] }],
    });
    deepStrictEqual(read3.body.outputs, [{ dimensions: [3], data: [12, 13, 14] }]);
    const write5 = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: [1, 2, 3, 4, 5], dimensions: [5] }, {
        data: [0, 0, 0, 0, 0],
        dimensions: [5],
      }],
      outputs: [{ buffer: token }],
    });
    deepStrictEqual(write5.body.outputs, [{ dimensions: [5] }]);
    const mismatch = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ buffer: token }, { data: [1, 1, 1], dimensions: [3] }],
    });
    strictEqual(mismatch.status, 400);
    const copyOut = await server.request("POST", "/v1/memories", { size: 12 });
    const wrongSize = await server.request("POST", `/v1/buffers/${token}/copy-to`, {
      memory: copyOut.body.id,
    });
    strictEqual(wrongSize.status, 400);
    match(String(wrongSize.body.message), /holds 20/);
    const dynamicCopyIn = await server.request("POST", `/v1/buffers/${token}/copy-from`, {
      memory: copyOut.body.id,
    });
    strictEqual(dynamicCopyIn.status, 400);
    match(String(dynamicCopyIn.body.message), /unknown dimensions/);
  } finally {
    await server.close();
  }
});

Deno.test("several executions read one buffer at once", async () => {
  const server = await startTestServer({ workers: 2 });
  try {
    const id = await compile(server, addModel(256));
    const buffer = await server.request("POST", `/v1/compilations/${id}/buffers`, {
      roles: [{ io: "input", index: 0 }, { io: "output", index: 0 }],
    });
    const token = buffer.body.token as string;
    const ones = new Float32Array(256).fill(1);
    const memory = await fetch(`${server.url}/v1/memories`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: new Uint8Array(ones.buffer),
    }).then((r) => r.json());
    strictEqual(
      (await server.request("POST", `/v1/buffers/${token}/copy-from`, { memory: memory.id }))
        .status,
      204,
    );
    const runs = await Promise.all(
      Array.from(
        { length: 24 },
        (_, k) =>
          server.request("POST", `/v1/compilations/${id}/executions`, {
            inputs: [{ buffer: token }, { data: new Array(256).fill(k) }],
          }),
      ),
    );
    runs.forEach((run, k) => {
      strictEqual(run.status, 200);
      const data = (run.body.outputs as { data: number[] }[])[0].data;
      ok(data.every((v) => v === 1 + k), `reader ${k} saw the buffer's contents`);
    });
    const racing = await Promise.all([
      server.request("POST", `/v1/compilations/${id}/executions`, {
        inputs: [{ buffer: token }, { data: new Array(256).fill(1) }],
        outputs: [{ buffer: token }],
      }),
      ...Array.from(
        { length: 6 },
        () =>
          server.request("POST", `/v1/compilations/${id}/executions`, {
            inputs: [{ buffer: token }, { data: new Array(256).fill(0) }],
          }),
      ),
    ]);
    for (const run of racing) {
      ok(run.status === 200 || run.status === 400, `racing use answered ${run.status}`);
      if (run.status === 400) match(String(run.body.message), /being (read|written)/);
    }
    strictEqual((await server.request("GET", "/healthz")).status, 200);
  } finally {
    await server.close();
  }
});
