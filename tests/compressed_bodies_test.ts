/**
 * Request bodies sent with `Content-Encoding: gzip` or `deflate` on every route that takes a
 * body, not only `/v2` inference: a model's JSON, a compilation, an execution (JSON and raw
 * bytes, which the execution lane hands to the router), a memory's bytes. Each is answered as
 * its plain twin is; an encoding the service does not inflate, and data that is not what the
 * header says, are 400s that say so.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { addModel, type TestServer, withTestServer } from "./server_fixture.ts";

/** `bytes` compressed with `encoding`. */
async function compressed(
  bytes: Uint8Array<ArrayBuffer>,
  encoding: "gzip" | "deflate",
): Promise<Uint8Array<ArrayBuffer>> {
  const stream = new Blob([bytes]).stream().pipeThrough(new CompressionStream(encoding));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** POSTs `body` compressed with `encoding`, as `type`; the status and the answer's bytes. */
async function postCompressed(
  server: TestServer,
  path: string,
  body: string | Uint8Array<ArrayBuffer>,
  { type, encoding, headers = {} }: {
    type: string;
    encoding: "gzip" | "deflate";
    headers?: Record<string, string>;
  },
) {
  const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const response = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": type, "content-encoding": encoding, ...headers },
    body: await compressed(bytes, encoding),
  });
  return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()) };
}

const json = (bytes: Uint8Array) => JSON.parse(new TextDecoder().decode(bytes));

Deno.test("/v1 takes gzip and deflate bodies: models, compilations, executions, memories", async () => {
  await withTestServer({}, async (server) => {
    const model = await postCompressed(server, "/v1/models", JSON.stringify(addModel(3)), {
      type: "application/json",
      encoding: "gzip",
    });
    strictEqual(model.status, 201, new TextDecoder().decode(model.bytes));
    const compilation = await postCompressed(
      server,
      "/v1/compilations",
      JSON.stringify({ model: json(model.bytes).id, devices: ["cpu-reference"] }),
      { type: "application/json", encoding: "deflate" },
    );
    strictEqual(compilation.status, 201, new TextDecoder().decode(compilation.bytes));
    const executions = `/v1/compilations/${json(compilation.bytes).id}/executions`;

    // JSON: the same answer as the plain body's.
    const request = { inputs: [{ data: [1, 2, 3] }, { data: [10, 20, 30] }] };
    const plain = await server.request("POST", executions, request);
    strictEqual(plain.status, 200, JSON.stringify(plain.body));
    const zipped = await postCompressed(server, executions, JSON.stringify(request), {
      type: "application/json",
      encoding: "gzip",
    });
    strictEqual(zipped.status, 200, new TextDecoder().decode(zipped.bytes));
    deepStrictEqual(json(zipped.bytes).outputs, plain.body.outputs);
    deepStrictEqual(json(zipped.bytes).outputs[0].data, [11, 22, 33]);

    // The same sent as a stream, of no declared length (chunked).
    const gzipped = await compressed(new TextEncoder().encode(JSON.stringify(request)), "gzip");
    const streamed = await fetch(`${server.url}${executions}`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: new Blob([gzipped]).stream(),
    });
    const streamedBody = await streamed.json();
    strictEqual(streamed.status, 200, JSON.stringify(streamedBody));
    deepStrictEqual(streamedBody.outputs, plain.body.outputs);

    // A framed binary body (two inputs' bytes after the JSON header), deflated.
    const header = new TextEncoder().encode(JSON.stringify({
      inputs: [
        { parameters: { binary_data_size: 12 } },
        { parameters: { binary_data_size: 12 } },
      ],
    }));
    const framed = new Uint8Array(header.byteLength + 24);
    framed.set(header);
    framed.set(new Uint8Array(new Float32Array([1, 2, 3, 4, 5, 6]).buffer), header.byteLength);
    const binary = await postCompressed(server, executions, framed, {
      type: "application/octet-stream",
      encoding: "deflate",
      headers: { "inference-header-content-length": String(header.byteLength) },
    });
    strictEqual(binary.status, 200, new TextDecoder().decode(binary.bytes));
    deepStrictEqual(json(binary.bytes).outputs[0].data, [5, 7, 9]);

    // A memory's bytes are stored inflated.
    const content = new Uint8Array(4096).map((_, k) => k % 7);
    const memory = await postCompressed(server, "/v1/memories", content, {
      type: "application/octet-stream",
      encoding: "gzip",
    });
    strictEqual(memory.status, 201, new TextDecoder().decode(memory.bytes));
    strictEqual(json(memory.bytes).size, content.byteLength);
    const read = await fetch(`${server.url}/v1/memories/${json(memory.bytes).id}`);
    deepStrictEqual(new Uint8Array(await read.arrayBuffer()), content);
  });
});

Deno.test("an encoding the service does not inflate, or data that is not gzip, is a 400 saying so", async () => {
  await withTestServer({}, async (server) => {
    const registered = await server.request("POST", "/v1/models", addModel(3));
    strictEqual(registered.status, 201, JSON.stringify(registered.body));
    const brotli = await fetch(`${server.url}/v1/models`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "br" },
      body: JSON.stringify(addModel(3)),
    });
    const refusal = await brotli.json();
    strictEqual(brotli.status, 400, JSON.stringify(refusal));
    ok(refusal.message.includes("Content-Encoding br is not supported (gzip, deflate)"), refusal);

    const garbled = await fetch(`${server.url}/v1/compilations`, {
      method: "POST",
      headers: { "content-type": "application/json", "content-encoding": "gzip" },
      body: JSON.stringify({ model: registered.body.id }),
    });
    const answer = await garbled.json();
    strictEqual(garbled.status, 400, JSON.stringify(answer));
    ok(answer.message.includes("not valid gzip data"), answer.message);
  });
});
