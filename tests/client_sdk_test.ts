/**
 * End-to-end tests of the client SDK (client/) against a real server on 127.0.0.1 with a
 * temporary data directory: models built with the SDK are registered, compiled and
 * executed over HTTP, and service failures surface as NnapiError.
 */
import { rejectsWithStatus } from "./sdk_fixture.ts";
import { deepStrictEqual, ok, rejects, strictEqual, throws } from "node:assert/strict";
import {
  Compilation,
  FuseCode,
  Memory,
  type Model,
  NnapiError,
  NnClient,
  PaddingCode,
} from "../client/mod.ts";
import { Transport } from "../client/http.ts";
import { type RunningServer, startServer } from "../server.ts";

/** Runs `fn` with a fresh server (optionally requiring API keys) and stops it afterwards. */
async function withServer(
  fn: (server: RunningServer) => Promise<void>,
  apiKeys?: Map<string, string>,
): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-sdk-test-" });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    dataDir,
    verbose: false,
    workers: 1,
    apiKeys,
  });
  try {
    await fn(server);
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}

/** out = a + b with b a constant: all TENSOR_FLOAT32 of `dimensions`. */
function addConstantModel(
  client: NnClient,
  b: Float32Array,
  dimensions: number[],
  outputDimensions = dimensions,
): Model {
  const m = client.model();
  const tensor = { type: "TENSOR_FLOAT32" as const, dimensions };
  const a = m.addOperand(tensor);
  const constant = m.addOperand(tensor);
  const act = m.addOperand({ type: "INT32" });
  const out = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: outputDimensions });
  m.setOperandValue(constant, b);
  m.setOperandValue(act, FuseCode.NONE);
  m.addOperation("ADD", [a, constant, act], [out]);
  m.identifyInputsAndOutputs([a], [out]);
  return m;
}

/** A single-channel 3x3 CONV_2D with a 2x2 filter, VALID padding, stride 1 and a bias. */
function convModel(client: NnClient): Model {
  const m = client.model();
  const input = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1, 3, 3, 1] });
  const filter = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1, 2, 2, 1] });
  const bias = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1] });
  const scalars = [PaddingCode.VALID, 1, 1, FuseCode.NONE].map((value) => {
    const index = m.addOperand({ type: "INT32" });
    m.setOperandValue(index, value);
    return index;
  });
  const output = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1, 2, 2, 1] });
  m.setOperandValue(filter, new Float32Array([1, 2, 3, 4]));
  m.setOperandValue(bias, [0.5]);
  m.addOperation("CONV_2D", [input, filter, bias, ...scalars], [output]);
  m.identifyInputsAndOutputs([input], [output]);
  return m;
}

Deno.test("NnClient.devices() lists the service's devices", async () => {
  await withServer(async (server) => {
    const devices = await new NnClient({ baseUrl: server.url }).devices();
    ok(devices.length > 0);
    for (const device of devices) {
      strictEqual(typeof device.name, "string");
      strictEqual(typeof device.featureLevel, "number");
    }
  });
});

Deno.test("Model.toJSON() gives constants NNAPI lifetimes and sends typed arrays as base64", () => {
  const client = new NnClient({ baseUrl: "http://127.0.0.1:1" });
  const m = addConstantModel(client, new Float32Array([1, 2, 3, 4]), [2, 2]);
  const big = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [33] });
  m.setOperandValue(big, new Float64Array(33).fill(1.5));
  const json = m.toJSON();
  deepStrictEqual(json.operands.map((o) => o.lifetime), [
    "MODEL_INPUT",
    "CONSTANT_COPY",
    "CONSTANT_COPY",
    "MODEL_OUTPUT",
    "CONSTANT_REFERENCE",
  ]);
  const bytes = new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);
  deepStrictEqual(json.operands[1].value, { base64: bytes.toBase64() });
  deepStrictEqual(json.operands[2].value, [0]);
  const bigValue = json.operands[4].value;
  ok(bigValue && "base64" in bigValue);
  deepStrictEqual(
    new Float32Array(Uint8Array.fromBase64(bigValue.base64).buffer),
    new Float32Array(33).fill(1.5),
  );
  deepStrictEqual(json.inputIndexes, [0]);
  deepStrictEqual(json.outputIndexes, [3]);
  strictEqual(json.relaxComputationFloat32toFloat16, false);
});

Deno.test("an ADD model built with the SDK computes a + constant with timing", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = addConstantModel(client, new Float32Array([10, 20, 30, 40]), [2, 2]);
    const compilation = await client.compile(m, { preference: "FAST_SINGLE_ANSWER" });
    strictEqual(typeof m.id, "string");
    strictEqual(compilation.model, m.id);
    strictEqual(compilation.cache, "none");
    ok(compilation.prepareMs >= 0);

    const result = await compilation.execution()
      .setInput(0, new Float32Array([1, 2, 3, 4]))
      .setMeasureTiming(true)
      .compute();
    strictEqual(result.outputs.length, 1);
    ok(result.outputs[0].data instanceof Float32Array);
    deepStrictEqual(result.outputs[0].data, new Float32Array([11, 22, 33, 44]));
    deepStrictEqual(result.outputs[0].dimensions, [2, 2]);
    deepStrictEqual(result.outputShapes, [{ dimensions: [2, 2], isSufficient: true }]);
    ok(result.timing, "timing was requested");
    ok(result.timing.inDriverUs >= result.timing.onDeviceUs);
    ok(result.timing.onDeviceUs >= 0);

    const plain = await compilation.compute([[0.5, 0.5, 0.5, 0.5]]);
    deepStrictEqual(plain.outputs[0].data, new Float32Array([10.5, 20.5, 30.5, 40.5]));
    strictEqual(plain.timing, undefined);
    await compilation.delete();
    await m.delete();
  });
});

Deno.test("a large constant is sent by reference and still computes", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const b = Float32Array.from({ length: 64 }, (_, i) => i);
    const m = addConstantModel(client, b, [64]);
    strictEqual(m.toJSON().operands[1].lifetime, "CONSTANT_REFERENCE");
    const compilation = await client.compile(m);
    const { outputs } = await compilation.compute([new Float32Array(64).fill(1)]);
    deepStrictEqual(outputs[0].data, b.map((x) => x + 1));
  });
});

Deno.test("a CONV_2D model built with the SDK computes the convolution", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = convModel(client);
    const support = await m.supportedOperations();
    ok(support.length > 0);
    deepStrictEqual(support[0].supported, [true]);
    const compilation = await client.compile(m);
    const { outputs, outputShapes } = await compilation.compute([[1, 2, 3, 4, 5, 6, 7, 8, 9]]);
    // Each output is 1*x00 + 2*x01 + 3*x10 + 4*x11 + 0.5 over a 2x2 window.
    deepStrictEqual(outputs[0].data, new Float32Array([37.5, 47.5, 67.5, 77.5]));
    deepStrictEqual(outputShapes[0].dimensions, [1, 2, 2, 1]);
  });
});

Deno.test("outputs of unknown dimensions come back with the dimensions computed", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = addConstantModel(client, new Float32Array([1, 1, 1]), [3], [0]);
    const compilation = await client.compile(m);
    const { outputs, outputShapes } = await compilation.compute([[1, 2, 3]]);
    deepStrictEqual(outputs[0].dimensions, [3]);
    deepStrictEqual(outputShapes, [{ dimensions: [3], isSufficient: true }]);
    deepStrictEqual(outputs[0].data, new Float32Array([2, 3, 4]));
  });
});

Deno.test("compiling a model id reads its metadata and decodes quant8 outputs as Uint8Array", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = client.model();
    const quant = {
      type: "TENSOR_QUANT8_ASYMM" as const,
      dimensions: [4],
      scale: 0.5,
      zeroPoint: 0,
    };
    const a = m.addOperand(quant);
    const b = m.addOperand(quant);
    const act = m.addOperand({ type: "INT32" });
    const out = m.addOperand(quant);
    m.setOperandValue(act, FuseCode.NONE);
    m.addOperation("ADD", [a, b, act], [out]);
    m.identifyInputsAndOutputs([a, b], [out]);
    const id = await m.finish();
    strictEqual(await m.finish(), id, "finishing again keeps the id");

    const info = await client.modelInfo(id);
    deepStrictEqual(info.outputs, [
      { operand: out, type: "TENSOR_QUANT8_ASYMM", dimensions: [4], scale: 0.5, zeroPoint: 0 },
    ]);
    const compilation: Compilation = await client.compile(id);
    deepStrictEqual(compilation.signature.inputs.map((i) => i.operand), [a, b]);
    const { outputs } = await compilation.compute([
      new Uint8Array([1, 2, 3, 4]),
      [10, 20, 30, 40],
    ]);
    ok(outputs[0].data instanceof Uint8Array);
    deepStrictEqual(outputs[0].data, new Uint8Array([11, 22, 33, 44]));
  });
});

Deno.test("float16 models take and return Float16Array data", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = client.model();
    const half = { type: "TENSOR_FLOAT16" as const, dimensions: [2] };
    const a = m.addOperand(half);
    const b = m.addOperand(half);
    const act = m.addOperand({ type: "INT32" });
    const out = m.addOperand(half);
    m.setOperandValue(act, FuseCode.NONE);
    m.addOperation("ADD", [a, b, act], [out]);
    m.identifyInputsAndOutputs([a, b], [out]);
    const compilation = await client.compile(m);
    const { outputs } = await compilation.compute([[1.5, 2], new Float16Array([0.25, 1])]);
    ok(outputs[0].data instanceof Float16Array);
    deepStrictEqual([...outputs[0].data], [1.75, 3]);
  });
});

Deno.test("Execution.toJSON() is the docs/api.md request: omitted inputs, dimensions, options", () => {
  const execution = new Compilation(
    new Transport({ baseUrl: "http://127.0.0.1:1" }),
    { id: "c", model: "m", cache: "none", prepareMs: 0 },
    {
      inputs: [
        { operand: 0, type: "TENSOR_FLOAT32", dimensions: [0] },
        { operand: 1, type: "TENSOR_INT32", dimensions: [2] },
        { operand: 2, type: "TENSOR_FLOAT32", dimensions: [1] },
      ],
      outputs: [
        { operand: 3, type: "TENSOR_FLOAT32", dimensions: [0] },
        { operand: 4, type: "TENSOR_FLOAT32", dimensions: [1] },
      ],
    },
  ).execution();
  execution.setInput(0, [1, 2, 3], { dimensions: [3] })
    .setInput(1, new Float64Array([7, -1]))
    .setInputOmitted(2)
    .setOutput(0, { dimensions: [3] })
    .setMeasureTiming(true)
    .setDeadline(250);
  deepStrictEqual(execution.toJSON(), {
    inputs: [
      { data: [1, 2, 3], dimensions: [3] },
      { base64: new Uint8Array(new Int32Array([7, -1]).buffer).toBase64() },
      { omitted: true },
    ],
    outputs: [{ dimensions: [3] }, {}],
    measureTiming: true,
    deadlineMs: 250,
    outputEncoding: "base64",
  });
});

Deno.test("an invalid model is rejected with INVALID_ARGUMENT naming the operation", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = client.model();
    const a = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    const out = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    m.addOperation("ADD", [a, a], [out]); // ADD needs an activation scalar
    m.identifyInputsAndOutputs([a], [out]);
    const error = await rejectsWithStatus(m.finish(), "INVALID_ARGUMENT", 400);
    ok(/operation 0/.test(error.message), error.message);
    deepStrictEqual(error.path, ["operations", 0]);
    strictEqual(m.finished, false);
    strictEqual(m.id, undefined);
  });
});

Deno.test("unknown ids and deleted resources are NOT_FOUND", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    await rejectsWithStatus(client.compile("no-such-model"), "NOT_FOUND", 404);
    const m = addConstantModel(client, new Float32Array([1, 2]), [2]);
    const compilation = await client.compile(m);
    await compilation.delete();
    await rejectsWithStatus(compilation.compute([[1, 2]]), "NOT_FOUND", 404);
    await m.delete();
    await rejectsWithStatus(client.compile(m.id!), "NOT_FOUND", 404);
  });
});

Deno.test("execution arguments the model cannot take are INVALID_ARGUMENT", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await client.compile(
      addConstantModel(client, new Float32Array([1, 2]), [2]),
    );
    await rejectsWithStatus(compilation.compute([[1, 2, 3]]), "INVALID_ARGUMENT", 400);
    await rejectsWithStatus(
      compilation.execution().setInput(0, [1, 2], { dimensions: [3] }).compute(),
      "INVALID_ARGUMENT",
      400,
    );
  });
});

Deno.test("an output described too small is OUTPUT_INSUFFICIENT_SIZE with every output shape", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = addConstantModel(client, new Float32Array([1, 1, 1]), [3], [0]);
    const compilation = await client.compile(m);
    const error = await rejectsWithStatus(
      compilation.execution().setInput(0, [1, 2, 3]).setOutput(0, { dimensions: [2] }).compute(),
      "OUTPUT_INSUFFICIENT_SIZE",
      422,
    );
    deepStrictEqual(error.outputShapes, [{ dimensions: [3], isSufficient: false }]);
  });
});

Deno.test("with API keys, a client without its key is UNAUTHORIZED", async () => {
  await withServer(async (server) => {
    await rejectsWithStatus(
      new NnClient({ baseUrl: server.url }).devices(),
      "UNAUTHORIZED",
      401,
    );
    await rejectsWithStatus(
      new NnClient({ baseUrl: server.url, apiKey: "wrong" }).devices(),
      "UNAUTHORIZED",
      401,
    );
    const devices = await new NnClient({ baseUrl: server.url, apiKey: "secret-a" }).devices();
    ok(devices.length > 0);
  }, new Map([["secret-a", "alice"]]));
});

Deno.test("one client's models are NOT_FOUND for another client", async () => {
  await withServer(async (server) => {
    const alice = new NnClient({ baseUrl: server.url, apiKey: "secret-a" });
    const bob = new NnClient({ baseUrl: server.url, apiKey: "secret-b" });
    const id = await addConstantModel(alice, new Float32Array([1, 2]), [2]).finish();
    await rejectsWithStatus(bob.compile(id), "NOT_FOUND", 404);
  }, new Map([["secret-a", "alice"], ["secret-b", "bob"]]));
});

Deno.test("an unreachable service is DEVICE_UNAVAILABLE with HTTP status 0", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  await rejectsWithStatus(
    new NnClient({ baseUrl: `http://127.0.0.1:${port}` }).devices(),
    "DEVICE_UNAVAILABLE",
    0,
  );
});

Deno.test("SDK misuse fails locally with ordinary errors before any request", async () => {
  await withServer(async (server) => {
    let requests = 0;
    const client = new NnClient({
      baseUrl: server.url,
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const m = addConstantModel(client, new Float32Array([1, 2]), [2]);
    throws(() => m.addOperation("ADD", [0, 1, 99], [3]), RangeError);
    const compilation = await client.compile(m);
    requests = 0;

    throws(() => m.addOperand({ type: "INT32" }), /finished/);
    throws(() => m.setOperandValue(1, [5, 6]), /finished/);
    const execution = compilation.execution();
    throws(() => execution.setInput(1, [1, 2]), RangeError);
    throws(() => execution.setOutput(1), RangeError);
    await rejects(execution.compute(), (error) => {
      ok(!(error instanceof NnapiError));
      ok(/input 0 has no value/.test((error as Error).message));
      return true;
    });
    const unfinished = client.model();
    unfinished.addOperand({ type: "TENSOR_FLOAT32", dimensions: [1] });
    await rejects(unfinished.finish(), /identifyInputsAndOutputs/);
    strictEqual(requests, 0);
  });
});

const f32bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);

Deno.test("memories are created from bytes or a size, read (whole or a range), written and deleted", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const memory = await client.createMemory(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    ok(memory instanceof Memory);
    strictEqual(typeof memory.id, "string");
    strictEqual(memory.size, 8);
    deepStrictEqual(await memory.read(), new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]));
    deepStrictEqual(await memory.read({ offset: 2, length: 3 }), new Uint8Array([3, 4, 5]));
    deepStrictEqual(await memory.read({ offset: 8, length: 0 }), new Uint8Array(0));
    await memory.write(6, new Uint8Array([70, 80]));
    deepStrictEqual(await memory.read(), new Uint8Array([1, 2, 3, 4, 5, 6, 70, 80]));

    const zeros = await client.createMemory({ size: 16 });
    strictEqual(zeros.size, 16);
    deepStrictEqual(await zeros.read(), new Uint8Array(16));

    await memory.delete();
    await rejectsWithStatus(memory.read(), "NOT_FOUND", 404);
    await rejectsWithStatus(memory.write(0, new Uint8Array([1])), "NOT_FOUND", 404);
  });
});

Deno.test("memory regions outside the memory fail locally with RangeError", async () => {
  await withServer(async (server) => {
    let requests = 0;
    const client = new NnClient({
      baseUrl: server.url,
      fetch: (input, init) => {
        requests++;
        return fetch(input, init);
      },
    });
    const memory = await client.createMemory({ size: 8 });
    const m = addConstantModel(client, new Float32Array([1, 2]), [2]);
    const compilation = await client.compile(m);
    requests = 0;
    await rejects(memory.read({ offset: 4, length: 5 }), RangeError);
    await rejects(memory.write(7, new Uint8Array(2)), RangeError);
    await rejects(client.createMemory({ size: -1 }), RangeError);
    const execution = compilation.execution();
    throws(() => execution.setInputFromMemory(0, memory, 4, 8), RangeError);
    throws(() => execution.setInputFromMemory(0, memory, -1, 4), RangeError);
    throws(() => execution.setOutputFromMemory(0, memory, 0, 9), RangeError);
    throws(() => execution.setInputFromMemory(1, memory, 0, 8), RangeError);
    const model = client.model();
    const weights = model.addOperand({ type: "TENSOR_FLOAT32", dimensions: [3] });
    throws(() => model.setOperandValueFromMemory(weights, memory, 0, 8), /12 bytes/);
    throws(() => model.setOperandValueFromMemory(weights, memory, 4, 12), RangeError);
    strictEqual(requests, 0);
  });
});

Deno.test("executions take inputs from memories and write outputs into them", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await client.compile(
      addConstantModel(client, new Float32Array([10, 20, 30]), [3]),
    );
    const inputs = await client.createMemory(f32bytes([0, 1, 2, 3, 4, 5, 6]));
    const outputs = await client.createMemory({ size: 20 });

    const written = await compilation.execution()
      .setInputFromMemory(0, inputs, 4, 12)
      .setOutputFromMemory(0, outputs, 8, 12)
      .compute();
    deepStrictEqual(written.outputs, [{ dimensions: [3] }]);
    deepStrictEqual(written.outputShapes, [{ dimensions: [3], isSufficient: true }]);
    deepStrictEqual(
      new Float32Array((await outputs.read({ offset: 8, length: 12 })).buffer),
      new Float32Array([11, 22, 33]),
    );
    deepStrictEqual(
      new Float32Array((await outputs.read()).buffer),
      new Float32Array([0, 0, 11, 22, 33]),
    );

    // A memory input with an inline output; the memory is read at each compute.
    await inputs.write(16, f32bytes([100, 200, 300]));
    const inline = await compilation.execution().setInputFromMemory(0, inputs, 16, 12).compute();
    deepStrictEqual(inline.outputs[0].data, new Float32Array([110, 220, 330]));

    const request = compilation.execution()
      .setInputFromMemory(0, inputs, 0, 12, { dimensions: [3] })
      .setOutputFromMemory(0, outputs, 0, 12);
    deepStrictEqual(request.toJSON().inputs, [
      { memory: inputs.id, offset: 0, length: 12, dimensions: [3] },
    ]);
    deepStrictEqual(request.toJSON().outputs, [{ memory: outputs.id, offset: 0, length: 12 }]);
  });
});

Deno.test("an output memory region too small is OUTPUT_INSUFFICIENT_SIZE; a deleted memory NOT_FOUND", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const compilation = await client.compile(
      addConstantModel(client, new Float32Array([1, 1, 1]), [3], [0]),
    );
    const inputs = await client.createMemory(f32bytes([1, 2, 3]));
    const outputs = await client.createMemory({ size: 8 });
    const error = await rejectsWithStatus(
      compilation.execution()
        .setInputFromMemory(0, inputs, 0, 12)
        .setOutputFromMemory(0, outputs, 0, 8)
        .compute(),
      "OUTPUT_INSUFFICIENT_SIZE",
      422,
    );
    deepStrictEqual(error.outputShapes, [{ dimensions: [3], isSufficient: false }]);
    await inputs.delete();
    await rejectsWithStatus(
      compilation.execution().setInputFromMemory(0, inputs, 0, 12).compute(),
      "NOT_FOUND",
      404,
    );
  });
});

Deno.test("setOperandValueFromMemory makes a CONSTANT_REFERENCE into the model's pools", async () => {
  await withServer(async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const weights = await client.createMemory(f32bytes([0, 0, 100, 200, 300, 400]));
    const m = client.model();
    const tensor = { type: "TENSOR_FLOAT32" as const, dimensions: [2] };
    const a = m.addOperand(tensor);
    const b = m.addOperand(tensor);
    const c = m.addOperand(tensor);
    const act = m.addOperand({ type: "INT32" });
    const sum = m.addOperand(tensor);
    const out = m.addOperand(tensor);
    m.setOperandValueFromMemory(b, weights, 8, 8);
    m.setOperandValueFromMemory(c, weights, 16, 8);
    m.setOperandValue(act, FuseCode.NONE);
    m.addOperation("ADD", [a, b, act], [sum]);
    m.addOperation("ADD", [sum, c, act], [out]);
    m.identifyInputsAndOutputs([a], [out]);
    const json = m.toJSON();
    deepStrictEqual(json.pools, [weights.id]);
    deepStrictEqual(json.operands[b], {
      type: "TENSOR_FLOAT32",
      dimensions: [2],
      scale: 0,
      zeroPoint: 0,
      lifetime: "CONSTANT_REFERENCE",
      location: { poolIndex: 0, offset: 8, length: 8 },
    });
    deepStrictEqual(json.operands[c].location, { poolIndex: 0, offset: 16, length: 8 });
    strictEqual(json.operands[c].value, undefined);

    await m.finish();
    // The service copied the constants: changing or deleting the memory leaves the model.
    await weights.write(8, f32bytes([-1, -1, -1, -1]));
    await weights.delete();
    const compilation = await client.compile(m);
    const { outputs } = await compilation.compute([[1, 2]]);
    deepStrictEqual(outputs[0].data, new Float32Array([401, 602]));

    // A model referencing a deleted memory cannot be registered.
    const again = client.model();
    const x = again.addOperand(tensor);
    const w = again.addOperand(tensor);
    const act2 = again.addOperand({ type: "INT32" });
    const y = again.addOperand(tensor);
    again.setOperandValueFromMemory(w, weights, 8, 8);
    again.setOperandValue(act2, FuseCode.NONE);
    again.addOperation("ADD", [x, w, act2], [y]);
    again.identifyInputsAndOutputs([x], [y]);
    await rejectsWithStatus(again.finish(), "NOT_FOUND", 404);
  });
});
