/**
 * Executions whose tensors travel as raw bytes: framed bodies (a JSON header of
 * `Inference-Header-Content-Length` bytes, then the tensors), raw single-input bodies, and
 * framed or raw answers. Every result is compared with the JSON execution of the same
 * request; every malformed frame is a 400 naming its cause.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { addModel, float32Tensor, type TestServer, withTestServer } from "./server_fixture.ts";

const encoder = new TextEncoder();

function f32Bytes(values: number[]): Uint8Array<ArrayBuffer> {
  return new Uint8Array(new Float32Array(values).buffer);
}

/** A framed body: the header's JSON (padded with `pad` spaces) and the tensors after it. */
function framed(header: unknown, tensors: Uint8Array[], pad = 0) {
  const head = encoder.encode(JSON.stringify(header) + " ".repeat(pad));
  const body = new Uint8Array(head.byteLength + tensors.reduce((n, t) => n + t.byteLength, 0));
  body.set(head);
  let at = head.byteLength;
  for (const t of tensors) {
    body.set(t, at);
    at += t.byteLength;
  }
  return { body, headerLength: head.byteLength };
}

/** Splits a framed answer into its JSON header and its binary part. */
async function readFramed(response: Response) {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const length = Number(response.headers.get("inference-header-content-length"));
  ok(length > 0 && length <= bytes.byteLength, `header length ${length}`);
  return {
    header: JSON.parse(new TextDecoder().decode(bytes.subarray(0, length))),
    binary: bytes.subarray(length),
  };
}

async function compile(server: TestServer, model: unknown): Promise<string> {
  const registered = await server.request("POST", "/v1/models", model);
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const compiled = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
  });
  strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
  return compiled.body.id as string;
}

function post(server: TestServer, compilation: string, init: RequestInit, query = "") {
  return fetch(`${server.url}/v1/compilations/${compilation}/executions${query}`, {
    method: "POST",
    ...init,
  });
}

/** RELU over a float32 vector of unknown length: one input, one output. */
const RELU_ANY_LENGTH = {
  operands: [float32Tensor([0], "MODEL_INPUT"), float32Tensor([0], "MODEL_OUTPUT")],
  operations: [{ type: "RELU", inputs: [0], outputs: [1] }],
  inputIndexes: [0],
  outputIndexes: [1],
};

/** Two outputs of one float32 [3] input: RELU and RELU6. */
const TWO_OUTPUTS = {
  operands: [
    float32Tensor([3], "MODEL_INPUT"),
    float32Tensor([3], "MODEL_OUTPUT"),
    float32Tensor([3], "MODEL_OUTPUT"),
  ],
  operations: [
    { type: "RELU", inputs: [0], outputs: [1] },
    { type: "RELU6", inputs: [0], outputs: [2] },
  ],
  inputIndexes: [0],
  outputIndexes: [1, 2],
};

const A = [1.5, -2, 3.25, 4, -0.5];
const B = [0.5, 2, -1.25, 10, 7];
const SUM = A.map((a, k) => a + B[k]);

Deno.test("a framed body carries inputs as raw bytes; JSON, base64 and binary answers agree", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, addModel(5));
    const header = {
      inputs: [
        { parameters: { binary_data_size: 20 } },
        { parameters: { binary_data_size: 20 } },
      ],
    };
    // Header lengths 0..7 mod 8: the tensors after it are aligned or not; both are right.
    for (let pad = 0; pad < 8; pad++) {
      const { body, headerLength } = framed(header, [f32Bytes(A), f32Bytes(B)], pad);
      const response = await post(server, id, {
        headers: {
          "content-type": "application/octet-stream",
          "inference-header-content-length": String(headerLength),
        },
        body,
      });
      strictEqual(
        response.status,
        200,
        response.status === 200 ? "" : await response.clone().text(),
      );
      match(response.headers.get("content-type") ?? "", /application\/json/);
      const json = await response.json();
      deepStrictEqual(json.outputs, [{ dimensions: [5], data: SUM }]);
    }

    const asJson = await server.request("POST", `/v1/compilations/${id}/executions`, {
      inputs: [{ data: A }, { data: B }],
    });
    const { body, headerLength } = framed({ ...header, outputEncoding: "binary" }, [
      f32Bytes(A),
      f32Bytes(B),
    ]);
    const response = await post(server, id, {
      headers: { "inference-header-content-length": String(headerLength) },
      body,
    });
    strictEqual(response.status, 200, response.status === 200 ? "" : await response.clone().text());
    strictEqual(response.headers.get("content-type"), "application/octet-stream");
    const answer = await readFramed(response);
    // The answer's header is padded so its tensors start 8-byte aligned.
    strictEqual(Number(response.headers.get("inference-header-content-length")) % 8, 0);
    deepStrictEqual(answer.header.outputs, [{
      dimensions: [5],
      parameters: { binary_data_size: 20 },
    }]);
    deepStrictEqual(answer.header.outputShapes, asJson.body.outputShapes);
    deepStrictEqual(
      Array.from(new Float32Array(answer.binary.slice().buffer)),
      (asJson.body.outputs as { data: number[] }[])[0].data,
    );
  });
});

Deno.test("binary and JSON inputs mix in one framed body, and name-keyed inputs work", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, addModel(5));
    const mixed = framed({ inputs: [{ data: A }, { parameters: { binary_data_size: 20 } }] }, [
      f32Bytes(B),
    ]);
    const response = await post(server, id, {
      headers: { "inference-header-content-length": String(mixed.headerLength) },
      body: mixed.body,
    });
    strictEqual(response.status, 200, response.status === 200 ? "" : await response.clone().text());
    deepStrictEqual((await response.json()).outputs[0].data, SUM);

    const onnx = onnxBytes({
      inputs: [{ name: "x", dims: [2] }, { name: "y", dims: [2] }],
      outputs: [{ name: "difference", dims: [2] }],
      nodes: [{ op: "Sub", inputs: ["x", "y"], outputs: ["difference"] }],
      initializers: [],
    });
    const imported = await fetch(`${server.url}/v1/models`, {
      method: "POST",
      headers: { "content-type": "application/onnx" },
      body: new Uint8Array(onnx),
    }).then((r) => r.json());
    const compiled = await server.request("POST", "/v1/compilations", { model: imported.id });
    // Binary sections follow the header's order of inputs: y first here.
    const named = framed({
      inputs: {
        y: { parameters: { binary_data_size: 8 } },
        x: { parameters: { binary_data_size: 8 } },
      },
      outputEncoding: "binary",
    }, [f32Bytes([1, 2]), f32Bytes([10, 20])]);
    const answer = await readFramed(
      await post(server, compiled.body.id as string, {
        headers: { "inference-header-content-length": String(named.headerLength) },
        body: named.body,
      }),
    );
    deepStrictEqual(answer.header.outputs, [{
      name: "difference",
      dimensions: [2],
      parameters: { binary_data_size: 8 },
    }]);
    deepStrictEqual(Array.from(new Float32Array(answer.binary.slice().buffer)), [9, 18]);
  });
});

Deno.test("a single-input model takes its input as an application/octet-stream body", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, RELU_ANY_LENGTH);
    const values = [-1, 2, -3, 4, 5.5, -6];
    const expected = values.map((v) => Math.max(0, v));

    // Dimensions from the query; a JSON answer by default.
    let response = await post(server, id, {
      headers: { "content-type": "application/octet-stream" },
      body: f32Bytes(values),
    }, "?dimensions=6");
    strictEqual(response.status, 200, response.status === 200 ? "" : await response.clone().text());
    deepStrictEqual((await response.json()).outputs, [{ dimensions: [6], data: expected }]);

    // Dimensions from the header; the answer raw, as asked by Accept, timing in Server-Timing.
    response = await post(server, id, {
      headers: {
        "content-type": "application/octet-stream",
        "input-dimensions": "6",
        accept: "application/octet-stream",
      },
      body: f32Bytes(values),
    }, "?measureTiming=true");
    strictEqual(response.status, 200, response.status === 200 ? "" : await response.clone().text());
    strictEqual(response.headers.get("content-type"), "application/octet-stream");
    strictEqual(response.headers.get("output-dimensions"), "6");
    match(response.headers.get("server-timing") ?? "", /^device;dur=[\d.]+, driver;dur=[\d.]+$/);
    deepStrictEqual(Array.from(new Float32Array(await response.arrayBuffer())), expected);

    // outputEncoding=binary: a framed answer.
    response = await post(server, id, {
      headers: { "content-type": "application/octet-stream" },
      body: f32Bytes(values.slice(0, 2)),
    }, "?dimensions=2&outputEncoding=binary");
    const answer = await readFramed(response);
    deepStrictEqual(answer.header.outputs, [{
      dimensions: [2],
      parameters: { binary_data_size: 8 },
    }]);
    deepStrictEqual(Array.from(new Float32Array(answer.binary.slice().buffer)), [0, 2]);
  });
});

Deno.test("Accept: application/octet-stream with several outputs answers framed", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, TWO_OUTPUTS);
    const response = await post(server, id, {
      headers: { "content-type": "application/octet-stream", accept: "application/octet-stream" },
      body: f32Bytes([-1, 3, 9]),
    });
    strictEqual(response.status, 200, response.status === 200 ? "" : await response.clone().text());
    const answer = await readFramed(response);
    deepStrictEqual(answer.header.outputs.map((o: { dimensions: number[] }) => o.dimensions), [
      [3],
      [3],
    ]);
    deepStrictEqual(Array.from(new Float32Array(answer.binary.slice().buffer)), [
      0,
      3,
      9,
      0,
      3,
      6,
    ]);
  });
});

Deno.test("an output written to a memory has no binary part in a framed answer", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, TWO_OUTPUTS);
    const memory = await server.request("POST", "/v1/memories", { size: 12 });
    const request = framed({
      inputs: [{ parameters: { binary_data_size: 12 } }],
      outputs: [{}, { memory: memory.body.id, offset: 0, length: 12 }],
      outputEncoding: "binary",
    }, [f32Bytes([-1, 3, 9])]);
    const answer = await readFramed(
      await post(server, id, {
        headers: { "inference-header-content-length": String(request.headerLength) },
        body: request.body,
      }),
    );
    deepStrictEqual(answer.header.outputs, [
      { dimensions: [3], parameters: { binary_data_size: 12 } },
      { dimensions: [3] },
    ]);
    deepStrictEqual(Array.from(new Float32Array(answer.binary.slice().buffer)), [0, 3, 9]);
    const written = await fetch(`${server.url}/v1/memories/${memory.body.id}`);
    deepStrictEqual(Array.from(new Float32Array(await written.arrayBuffer())), [0, 3, 6]);
  });
});

Deno.test("malformed binary requests are 400 naming the cause", async () => {
  await withTestServer({}, async (server) => {
    const id = await compile(server, addModel(5));
    const twenty = { parameters: { binary_data_size: 20 } };
    const good = framed({ inputs: [twenty, twenty] }, [f32Bytes(A), f32Bytes(B)]);
    const cases: [string, RequestInit, RegExp, string?][] = [
      [
        "header length not a number",
        { headers: { "inference-header-content-length": "x1" }, body: good.body },
        /Inference-Header-Content-Length 'x1' is not a byte count/,
      ],
      [
        "header length past the body",
        { headers: { "inference-header-content-length": "100000" }, body: good.body },
        /not a byte count within the \d+-byte body/,
      ],
      [
        "header not JSON",
        {
          headers: { "inference-header-content-length": String(good.headerLength - 1) },
          body: good.body,
        },
        /are not JSON/,
      ],
      [
        "header against the schema",
        (() => {
          const bad = framed({ inputs: [{ parameters: { binary_data_size: -4 } }] }, []);
          return {
            headers: { "inference-header-content-length": String(bad.headerLength) },
            body: bad.body,
          };
        })(),
        /^header\.inputs\.0\.parameters\.binary_data_size/,
      ],
      [
        "sizes past the binary part",
        {
          headers: { "inference-header-content-length": String(good.headerLength) },
          body: good.body.subarray(0, good.body.byteLength - 4),
        },
        /inputs\.1\.parameters: binary_data_size 20 runs past the end of the binary data \(16 bytes left\)/,
      ],
      [
        "bytes left over",
        (() => {
          const extra = framed({ inputs: [twenty, twenty] }, [
            f32Bytes(A),
            f32Bytes(B),
            f32Bytes([1]),
          ]);
          return {
            headers: { "inference-header-content-length": String(extra.headerLength) },
            body: extra.body,
          };
        })(),
        /4 bytes of binary data follow the last tensor/,
      ],
      [
        "a size that does not fit the operand",
        (() => {
          const short = framed({
            inputs: [{ parameters: { binary_data_size: 16 } }, twenty],
          }, [f32Bytes(A.slice(0, 4)), f32Bytes(B)]);
          return {
            headers: { "inference-header-content-length": String(short.headerLength) },
            body: short.body,
          };
        })(),
        /needs 20 bytes for \[5\], got 16/,
      ],
      [
        "binary_data_size in a JSON body",
        {
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ inputs: [twenty, twenty] }),
        },
        /inputs\.0\.parameters\.binary_data_size: only a framed binary body/,
      ],
      [
        "a raw body for a two-input model",
        { headers: { "content-type": "application/octet-stream" }, body: f32Bytes(A) },
        /the model has 2 inputs, the request gives 1/,
      ],
      [
        "bad raw dimensions",
        { headers: { "content-type": "application/octet-stream" }, body: f32Bytes(A) },
        /dimensions '5x1' is not a comma-separated list/,
        "?dimensions=5x1",
      ],
      [
        "no content type and no frame",
        { body: JSON.stringify({ inputs: [] }) },
        /send the execution as application\/json, as a framed binary body/,
      ],
      [
        "an output given bytes",
        (() => {
          const withOutput = framed({
            inputs: [twenty, twenty],
            outputs: [twenty],
          }, [f32Bytes(A), f32Bytes(B)]);
          return {
            headers: { "inference-header-content-length": String(withOutput.headerLength) },
            body: withOutput.body,
          };
        })(),
        /output 0: an output takes only dimensions/,
      ],
    ];
    for (const [what, init, message, query] of cases) {
      const response = await post(server, id, init, query);
      const body = await response.json();
      strictEqual(response.status, 400, `${what}: ${JSON.stringify(body)}`);
      strictEqual(body.status, "INVALID_ARGUMENT", what);
      match(body.message, message, what);
    }
  });
});

Deno.test("a framed header larger than the JSON limit is refused; its tensors are not", async () => {
  await withTestServer({ maxJsonBytes: 4096 }, async (server) => {
    const id = await compile(server, RELU_ANY_LENGTH);
    const values = new Float32Array(4096).fill(1);
    const small = framed({
      inputs: [{ parameters: { binary_data_size: values.byteLength }, dimensions: [4096] }],
      outputEncoding: "binary",
    }, [new Uint8Array(values.buffer)]);
    const response = await post(server, id, {
      headers: { "inference-header-content-length": String(small.headerLength) },
      body: small.body,
    });
    strictEqual(response.status, 200, response.status === 200 ? "" : await response.clone().text());
    const answer = await readFramed(response);
    strictEqual(answer.binary.byteLength, values.byteLength);
    // An answer this large is streamed, with its length declared.
    strictEqual(
      Number(response.headers.get("content-length")),
      answer.binary.byteLength + Number(response.headers.get("inference-header-content-length")),
    );

    const padded = framed(
      {
        inputs: [{ parameters: { binary_data_size: 16 }, dimensions: [4] }],
      },
      [f32Bytes([1, 2, 3, 4])],
      5000,
    );
    const refused = await post(server, id, {
      headers: { "inference-header-content-length": String(padded.headerLength) },
      body: padded.body,
    });
    strictEqual(refused.status, 400);
    match((await refused.json()).message, /larger than 4096 bytes \(NNSERVE_MAX_JSON_BYTES\)/);
  });
});

Deno.test("the SDK sends typed inputs and receives outputs as raw bytes", async () => {
  await withTestServer({}, async (server) => {
    const registered = await server.request("POST", "/v1/models", TWO_OUTPUTS);
    const sent: { headers: Headers; body: Uint8Array }[] = [];
    const answers: Response[] = [];
    const client = new NnClient({
      baseUrl: server.url,
      fetch: async (input, init) => {
        sent.push({
          headers: new Headers(init?.headers),
          body: new Uint8Array(await new Response(init?.body).arrayBuffer()),
        });
        const response = await fetch(input, init);
        answers.push(response.clone());
        return response;
      },
    });
    const compilation = await client.compile(registered.body.id as string);
    const input = new Float32Array([-1, 3, 9]);
    const execution = compilation.execution().setInput(0, input);
    input.fill(100); // set up earlier: not what is sent
    const result = await execution.compute();
    deepStrictEqual(result.outputs.map((o) => Array.from(o.data!)), [[0, 3, 9], [0, 3, 6]]);
    ok(result.outputs.every((o) => o.data instanceof Float32Array));

    const request = sent.at(-1)!;
    const headerLength = Number(request.headers.get("inference-header-content-length"));
    strictEqual(headerLength % 8, 0);
    const header = JSON.parse(new TextDecoder().decode(request.body.subarray(0, headerLength)));
    deepStrictEqual(header, {
      inputs: [{ parameters: { binary_data_size: 12 } }],
      outputEncoding: "binary",
    });
    strictEqual(request.body.byteLength, headerLength + 12);
    strictEqual(answers.at(-1)!.headers.get("content-type"), "application/octet-stream");
    deepStrictEqual(execution.toJSON().inputs, [{
      base64: new Uint8Array(new Float32Array([-1, 3, 9]).buffer).toBase64(),
    }]);
  });
});
