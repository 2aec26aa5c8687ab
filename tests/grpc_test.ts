/**
 * The Open Inference Protocol over gRPC (NNSERVE_GRPC_PORT), with the protocol's own client
 * library (`@grpc/grpc-js` from `inference.proto`): liveness, readiness and metadata;
 * ModelInfer with raw contents and with typed contents answering the bytes `/v2` over HTTP
 * answers; the API key in `authorization` metadata; the driver's errors as gRPC codes.
 */
import { deepStrictEqual, ok, rejects, strictEqual } from "node:assert/strict";
import { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import { GrpcCallError, GrpcClient, GRPCInferenceService } from "../client/grpc.ts";
import {
  addModel,
  metric,
  registerCompiled,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";
import { pollUntil } from "./burst_fixture.ts";

const KEYS = new Map([["key-a", "alice"]]);

type Unary = (
  request: unknown,
  metadata: grpc.Metadata,
  callback: (error: grpc.ServiceError | null, response: Record<string, unknown>) => void,
) => void;

/** The service's client class, from the proto as the protocol's clients load it. */
/** A client of the endpoint; each call takes the key (or none) and returns its answer. */
function clientOf(port: number) {
  const client = new GRPCInferenceService(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as unknown as grpc.Client & Record<string, Unary>;
  const call = (method: string, request: unknown, key?: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const metadata = new grpc.Metadata();
      if (key) metadata.set("authorization", `Bearer ${key}`);
      client[method].call(client, request, metadata, (error, response) => {
        if (error) reject(error);
        else resolve(response);
      });
    });
  return { call, close: () => client.close() };
}

/** Registers the adder of two float32[2] as `adder` version 1 and compiles it. */
async function serveAdder(server: TestServer) {
  const headers = { authorization: "Bearer key-a" };
  const model = await server.request(
    "POST",
    "/v1/models?name=adder&version=1",
    addModel(2),
    headers,
  );
  strictEqual(model.status, 201, JSON.stringify(model.body));
  const compiled = await server.request("POST", "/v1/compilations", {
    model: model.body.id,
  }, headers);
  strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
}

/** A server serving the adder and a gRPC client of it (closed after `use`), for key-a's calls. */
async function withAdderClient(
  use: (call: ReturnType<typeof clientOf>["call"], server: TestServer) => Promise<void>,
): Promise<void> {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    await serveAdder(server);
    const { call, close } = clientOf(server.grpcPort!);
    try {
      await use(call, server);
    } finally {
      close();
    }
  });
}

/**
 * Registers `rows` (ADD of two float32 rows, the batch extent left open) and compiles it
 * with batches that wait `delayUs` to fill: requests stay in flight until then.
 */
async function serveRows(server: TestServer, delayUs: number) {
  const headers = { authorization: "Bearer key-a" };
  const model = await server.request(
    "POST",
    "/v1/models?name=rows&version=1",
    addModel(0),
    headers,
  );
  strictEqual(model.status, 201, JSON.stringify(model.body));
  const compiled = await server.request("POST", "/v1/compilations", {
    model: model.body.id,
    batching: { maxBatchSize: 64, maxQueueDelayUs: delayUs },
  }, headers);
  strictEqual(compiled.status, 201, JSON.stringify(compiled.body));
}

/** Executions waiting for their batch (`nnserve_batch_queued`). */
async function batchQueued(server: TestServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^nnserve_batch_queued (\d+)/m.exec(text)?.[1]);
}

const floats = (...values: number[]) => new Uint8Array(new Float32Array(values).buffer);

function grpcCode(code: grpc.status) {
  return (error: unknown) => (error as grpc.ServiceError).code === code;
}

Deno.test("the gRPC endpoint answers the protocol's core calls as /v2 does over HTTP", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    ok(server.grpcPort! > 0);
    await serveAdder(server);
    const grpcClient = clientOf(server.grpcPort!);
    try {
      const { call } = grpcClient;
      deepStrictEqual(await call("ServerLive", {}), { live: true });
      deepStrictEqual(await call("ServerReady", {}), { ready: true });
      strictEqual((await call("ServerMetadata", {})).name, "nnserve");
      deepStrictEqual(await call("ModelReady", { name: "adder", version: "1" }, "key-a"), {
        ready: true,
      });
      const metadata = await call("ModelMetadata", { name: "adder", version: "" }, "key-a");
      const http = await server.request("GET", "/v2/models/adder", undefined, {
        authorization: "Bearer key-a",
      });
      deepStrictEqual(
        {
          name: metadata.name,
          versions: metadata.versions,
          platform: metadata.platform,
          inputs: metadata.inputs,
          outputs: metadata.outputs,
        },
        http.body,
      );

      // Raw contents in and out: the bytes /v2's HTTP binary form answers.
      const inputs = [
        { name: "input0", datatype: "FP32", shape: [2] },
        { name: "input1", datatype: "FP32", shape: [2] },
      ];
      const raw = await call("ModelInfer", {
        model_name: "adder",
        id: "r1",
        inputs,
        raw_input_contents: [floats(1.5, 2), floats(10, 20)],
      }, "key-a");
      strictEqual(raw.model_name, "adder");
      strictEqual(raw.model_version, "1");
      strictEqual(raw.id, "r1");
      deepStrictEqual(raw.outputs, [{
        name: "output0",
        datatype: "FP32",
        shape: [2],
        parameters: {},
        contents: null,
      }]);
      const [bytes] = raw.raw_output_contents as Uint8Array[];
      deepStrictEqual(new Uint8Array(bytes), floats(11.5, 22));
      const viaHttp = await server.request("POST", "/v2/models/adder/infer", {
        inputs: [
          { ...inputs[0], data: [1.5, 2] },
          { ...inputs[1], data: [10, 20] },
        ],
      }, { authorization: "Bearer key-a" });
      deepStrictEqual((viaHttp.body.outputs as { data: number[] }[])[0].data, [11.5, 22]);

      // Typed contents in, raw out.
      const typed = await call("ModelInfer", {
        model_name: "adder",
        inputs: inputs.map((input, k) => ({
          ...input,
          contents: { fp32_contents: k === 0 ? [1, 2] : [3, 4] },
        })),
      }, "key-a");
      deepStrictEqual(
        new Uint8Array((typed.raw_output_contents as Uint8Array[])[0]),
        floats(4, 6),
      );

      // Triton's model configuration, as /v2 over HTTP gives it.
      const { config } = await call("ModelConfig", { name: "adder" }, "key-a");
      const httpConfig = await server.request("GET", "/v2/models/adder/config", undefined, {
        authorization: "Bearer key-a",
      });
      const { dynamic_batching: _none, ...configured } = config as Record<string, unknown>;
      deepStrictEqual(configured, httpConfig.body);

      // The statistics extension's numbers, as /v2 over HTTP reads them.
      const { model_stats: [stats] } = await call(
        "ModelStatistics",
        { name: "adder", version: "1" },
        "key-a",
      ) as { model_stats: Record<string, Record<string, { count: number }>>[] };
      const viaHttpStats = await server.request(
        "GET",
        "/v2/models/adder/versions/1/stats",
        undefined,
        {
          authorization: "Bearer key-a",
        },
      );
      const [httpStats] = viaHttpStats.body.model_stats as Record<string, unknown>[];
      strictEqual(stats.inference_stats.success.count, 3);
      // The protocol's cache statistics are not kept (null here, absent over HTTP).
      const { cache_hit: _hit, cache_miss: _miss, ...kept } = stats.inference_stats;
      deepStrictEqual(kept, httpStats.inference_stats);
    } finally {
      grpcClient.close();
    }
  });
});

Deno.test("gRPC calls need the API key and answer the driver's errors as gRPC codes", async () => {
  await withAdderClient(async (call, server) => {
    await rejects(call("ModelReady", { name: "adder" }), grpcCode(grpc.status.UNAUTHENTICATED));
    await rejects(
      call("ModelReady", { name: "adder" }, "wrong"),
      grpcCode(grpc.status.UNAUTHENTICATED),
    );
    await rejects(
      call("ModelMetadata", { name: "nope" }, "key-a"),
      grpcCode(grpc.status.NOT_FOUND),
    );
    const wrongType = call("ModelInfer", {
      model_name: "adder",
      inputs: [
        { name: "input0", datatype: "INT32", shape: [2] },
        { name: "input1", datatype: "FP32", shape: [2] },
      ],
      raw_input_contents: [floats(1, 2), floats(3, 4)],
    }, "key-a");
    await rejects(wrongType, (error: grpc.ServiceError) => {
      strictEqual(error.code, grpc.status.INVALID_ARGUMENT);
      ok(/input 'input0' is FP32, not INT32/.test(error.details), error.details);
      return true;
    });
    // One raw content for two inputs.
    await rejects(
      call("ModelInfer", {
        model_name: "adder",
        inputs: [
          { name: "input0", datatype: "FP32", shape: [2] },
          { name: "input1", datatype: "FP32", shape: [2] },
        ],
        raw_input_contents: [floats(1, 2)],
      }, "key-a"),
      grpcCode(grpc.status.INVALID_ARGUMENT),
    );
    // Bytes that are not a ModelInferRequest (a field whose length's varint is cut short).
    const raw = new grpc.Client(
      `127.0.0.1:${server.grpcPort}`,
      grpc.credentials.createInsecure(),
    );
    const garbage = await new Promise<grpc.ServiceError>((resolve) => {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", "Bearer key-a");
      raw.makeUnaryRequest(
        "/inference.GRPCInferenceService/ModelInfer",
        () => Buffer.from([0x0a, 0x80]),
        (bytes: Buffer) => bytes,
        {},
        metadata,
        (error) => resolve(error!),
      );
    });
    raw.close();
    strictEqual(garbage.code, grpc.status.INVALID_ARGUMENT, garbage.details);
    ok(/not a valid protobuf message/.test(garbage.details), garbage.details);
    // The service still answers.
    deepStrictEqual(await call("ServerLive", {}), { live: true });
  });
});

/** A duplex ModelStreamInfer call of a client, and the answers it has read. */
function openStream(port: number, key: string) {
  const client = new GRPCInferenceService(
    `127.0.0.1:${port}`,
    grpc.credentials.createInsecure(),
  ) as unknown as grpc.Client & {
    ModelStreamInfer(metadata: grpc.Metadata): grpc.ClientDuplexStream<unknown, Answer>;
  };
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${key}`);
  const stream = client.ModelStreamInfer(metadata);
  const answers: Answer[] = [];
  const done = new Promise<Answer[]>((resolve, reject) => {
    stream.on("data", (answer: Answer) => answers.push(answer));
    stream.on("end", () => resolve(answers));
    stream.on("error", reject);
  });
  return { stream, answers, done, close: () => client.close() };
}

interface Answer {
  error_message: string;
  infer_response: { id: string; raw_output_contents: Uint8Array[] };
}

function adderRequest(model: string, id: number) {
  return {
    model_name: model,
    id: String(id),
    inputs: [
      { name: "input0", datatype: "FP32", shape: [2] },
      { name: "input1", datatype: "FP32", shape: [2] },
    ],
    raw_input_contents: [floats(id, 1), floats(0.5, id)],
  };
}

Deno.test("ModelStreamInfer answers 10k requests pipelined on each of two streams at once, in order of ids", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    await serveAdder(server);
    const REQUESTS = 10_000;
    const streams = [openStream(server.grpcPort!, "key-a"), openStream(server.grpcPort!, "key-a")];
    try {
      // Each stream sends in windows of 16, so that no request is refused.
      await Promise.all(streams.map(async ({ stream, answers }) => {
        for (let id = 0; id < REQUESTS; id++) {
          stream.write(adderRequest("adder", id));
          while (id - answers.length >= 16) await new Promise((resolve) => setTimeout(resolve, 1));
        }
        stream.end();
      }));
      for (const { done } of streams) {
        const answers = await done;
        strictEqual(answers.length, REQUESTS);
        answers.forEach((answer, id) => {
          strictEqual(answer.error_message, "", answer.error_message);
          strictEqual(answer.infer_response.id, String(id));
          deepStrictEqual(
            new Uint8Array(answer.infer_response.raw_output_contents[0]),
            floats(id + 0.5, id + 1),
          );
        });
      }
    } finally {
      for (const { close } of streams) close();
    }
  });
});

Deno.test("ModelStreamInfer: the service polls after the answers of a stream that asks again at once, not of one slower than the window", async () => {
  await withTestServer(
    { apiKeys: KEYS, grpcPort: 0, burstPollingWindowUs: 300_000 },
    async (server) => {
      await serveAdder(server);
      const polled = async () =>
        await metric(server.url, "nnserve_burst_polling_seconds_total") ?? NaN;
      /** Sends `count` requests one at a time, `gapMs` after each answer. */
      const sendInTurn = async (count: number, gapMs: number) => {
        const { stream, answers, done, close } = openStream(server.grpcPort!, "key-a");
        try {
          for (let id = 0; id < count; id++) {
            if (id > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
            stream.write(adderRequest("adder", id));
            while (answers.length <= id) await new Promise((resolve) => setTimeout(resolve, 0));
            strictEqual(answers[id].error_message, "", answers[id].error_message);
          }
          stream.end();
          await done;
        } finally {
          close();
        }
      };
      // 0.4 s after each answer, past the window of 0.3 s: no polling.
      await sendInTurn(2, 400);
      strictEqual(await polled(), 0, "no polling for a stream slower than the window");
      await sendInTurn(20, 0);
      const seconds = await pollUntil(polled, (s) => s > 0);
      ok(seconds > 0, `polled ${seconds} s`);
    },
  );
});

Deno.test("a stream past its window of 32 in flight is refused at once; the rest answer", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    // The batch extent left open, and batches that wait 2 s to fill: 32 requests stay in flight.
    await serveRows(server, 2_000_000);
    // Its configuration says so, as Triton's does.
    const unaryClient = clientOf(server.grpcPort!);
    const { config } = await unaryClient.call("ModelConfig", { name: "rows" }, "key-a") as {
      config: Record<string, unknown>;
    };
    unaryClient.close();
    strictEqual(config.max_batch_size, 64);
    deepStrictEqual(config.dynamic_batching, {
      preferred_batch_size: [],
      max_queue_delay_microseconds: 2_000_000,
      default_queue_policy: { max_queue_size: 64 },
    });
    const { stream, answers, done, close } = openStream(server.grpcPort!, "key-a");
    try {
      const request = (id: number) => ({
        model_name: "rows",
        id: String(id),
        inputs: [
          { name: "input0", datatype: "FP32", shape: [1] },
          { name: "input1", datatype: "FP32", shape: [1] },
        ],
        raw_input_contents: [floats(id), floats(1)],
      });
      for (let id = 0; id < 33; id++) stream.write(request(id));
      // The refusal overtakes the 32 answers still waiting for their batch.
      while (answers.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
      strictEqual(answers[0].infer_response.id, "32");
      ok(
        /RESOURCE_EXHAUSTED_TRANSIENT: more than 32 requests in flight/.test(
          answers[0].error_message,
        ),
      );
      stream.end();
      const all = await done;
      strictEqual(all.length, 33);
      all.slice(1).forEach((answer, id) => {
        strictEqual(answer.error_message, "", answer.error_message);
        strictEqual(answer.infer_response.id, String(id));
        deepStrictEqual(
          new Uint8Array(answer.infer_response.raw_output_contents[0]),
          floats(id + 1),
        );
      });
    } finally {
      close();
    }
  });
});

Deno.test("a stream its client cancels mid-flight holds nothing after, and the service goes on", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    await serveRows(server, 1_000_000);
    const queued = () => batchQueued(server);
    const request = (id: number) => ({
      model_name: "rows",
      id: String(id),
      inputs: [
        { name: "input0", datatype: "FP32", shape: [1] },
        { name: "input1", datatype: "FP32", shape: [1] },
      ],
      raw_input_contents: [floats(id), floats(1)],
    });
    const first = openStream(server.grpcPort!, "key-a");
    first.done.catch(() => {}); // it ends cancelled
    for (let id = 0; id < 10; id++) first.stream.write(request(id));
    for (let i = 0; i < 500 && await queued() < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    strictEqual(await queued(), 10, "ten requests wait for their batch");
    first.stream.cancel();
    first.close();
    // Their batch runs when its delay ends, into a stream that is gone.
    for (let i = 0; i < 500 && await queued() > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    strictEqual(await queued(), 0);
    strictEqual(first.answers.length, 0);
    const second = openStream(server.grpcPort!, "key-a");
    try {
      second.stream.write(request(7));
      second.stream.end();
      const [answer] = await second.done;
      strictEqual(answer.error_message, "");
      deepStrictEqual(new Uint8Array(answer.infer_response.raw_output_contents[0]), floats(8));
    } finally {
      second.close();
    }
  });
});

Deno.test("gRPC system shared memory: regions over a client's memories feed and take ModelInfer's tensors", async () => {
  await withAdderClient(async (call, server) => {
    const headers = { authorization: "Bearer key-a" };
    const memory = async (bytes: Uint8Array) => {
      const response = await fetch(`${server.url}/v1/memories`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/octet-stream" },
        body: new Uint8Array(bytes),
      });
      strictEqual(response.status, 201);
      return (await response.json()).id as string;
    };
    const inputs = await memory(new Uint8Array([...floats(1, 2), ...floats(10, 20)]));
    const outputs = await memory(new Uint8Array(8));
    await call("SystemSharedMemoryRegister", {
      name: "in",
      key: inputs,
      offset: 0,
      byte_size: 16,
    }, "key-a");
    await call("SystemSharedMemoryRegister", {
      name: "out",
      key: outputs,
      offset: 0,
      byte_size: 8,
    }, "key-a");
    const status = await call("SystemSharedMemoryStatus", {}, "key-a") as {
      regions: Record<string, { key: string; byte_size: number }>;
    };
    deepStrictEqual(Object.keys(status.regions).sort(), ["in", "out"]);
    strictEqual(status.regions.in.key, inputs);
    strictEqual(status.regions.in.byte_size, 16);
    const region = (name: string, offset: number, size: number) => ({
      shared_memory_region: { string_param: name },
      shared_memory_offset: { int64_param: offset },
      shared_memory_byte_size: { int64_param: size },
    });
    const answer = await call("ModelInfer", {
      model_name: "adder",
      inputs: [
        { name: "input0", datatype: "FP32", shape: [2], parameters: region("in", 0, 8) },
        { name: "input1", datatype: "FP32", shape: [2], parameters: region("in", 8, 8) },
      ],
      outputs: [{ name: "output0", parameters: region("out", 0, 8) }],
    }, "key-a") as {
      outputs: { parameters: Record<string, Record<string, unknown>> }[];
      raw_output_contents: Uint8Array[];
    };
    strictEqual(answer.raw_output_contents.length, 0);
    strictEqual(answer.outputs[0].parameters.shared_memory_region.string_param, "out");
    const written = await fetch(`${server.url}/v1/memories/${outputs}`, { headers });
    deepStrictEqual(new Uint8Array(await written.arrayBuffer()), floats(11, 22));
    // CUDA shared memory, as under /v2: none, and none to register.
    deepStrictEqual(await call("CudaSharedMemoryStatus", {}, "key-a"), { regions: {} });
    await rejects(
      call("CudaSharedMemoryRegister", { name: "gpu", byte_size: 8 }, "key-a"),
      grpcCode(grpc.status.INVALID_ARGUMENT),
    );
    await call("SystemSharedMemoryUnregister", { name: "in" }, "key-a");
    const left = await call("SystemSharedMemoryStatus", {}, "key-a") as {
      regions: Record<string, unknown>;
    };
    deepStrictEqual(Object.keys(left.regions), ["out"]);
    await rejects(
      call("SystemSharedMemoryStatus", { name: "in" }, "key-a"),
      grpcCode(grpc.status.NOT_FOUND),
    );
  });
});

Deno.test("gRPC repository calls: index, unload and load a client's named model", async () => {
  await withAdderClient(async (call) => {
    const index = async (ready = false) =>
      ((await call("RepositoryIndex", { ready }, "key-a")).models as {
        name: string;
        version: string;
        state: string;
      }[]).map((m) => `${m.name}/${m.version} ${m.state}`);
    deepStrictEqual(await index(), ["adder/1 READY"]);
    await call("RepositoryModelUnload", { model_name: "adder" }, "key-a");
    deepStrictEqual(await index(), ["adder/1 UNAVAILABLE"]);
    deepStrictEqual(await index(true), []);
    deepStrictEqual(await call("ModelReady", { name: "adder" }, "key-a"), { ready: false });
    await call("RepositoryModelLoad", { model_name: "adder" }, "key-a");
    deepStrictEqual(await index(), ["adder/1 READY"]);
    await rejects(
      call("RepositoryModelLoad", { model_name: "nope" }, "key-a"),
      grpcCode(grpc.status.NOT_FOUND),
    );
  });
});

Deno.test("the SDK's GrpcClient: calls, inference with typed arrays, and a stream", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    await serveAdder(server);
    const sdk = new GrpcClient({ address: `127.0.0.1:${server.grpcPort}`, apiKey: "key-a" });
    try {
      strictEqual(await sdk.serverLive(), true);
      strictEqual(await sdk.modelReady("adder"), true);
      deepStrictEqual((await sdk.modelMetadata("adder")).versions, ["1"]);
      const inputs = (a: number) => [
        { name: "input0", datatype: "FP32", shape: [2], data: new Float32Array([a, 2]) },
        { name: "input1", datatype: "FP32", shape: [2], data: new Float32Array([10, 20]) },
      ];
      const result = await sdk.infer("adder", inputs(1), { id: "x" });
      strictEqual(result.id, "x");
      deepStrictEqual(result.outputs[0].data, new Float32Array([11, 22]));
      await rejects(sdk.infer("nope", inputs(1)), (error: GrpcCallError) => {
        strictEqual(error.code, grpc.status.NOT_FOUND);
        return true;
      });
      const stream = sdk.stream();
      for (let chunk = 0; chunk < 5; chunk++) {
        const answers = await Promise.all(
          Array.from({ length: 20 }, (_, k) => stream.infer("adder", inputs(chunk * 20 + k))),
        );
        answers.forEach((answer, k) =>
          deepStrictEqual(answer.outputs[0].data, new Float32Array([chunk * 20 + k + 10, 22]))
        );
      }
      await stream.close();
    } finally {
      sdk.close();
    }
  });
});

Deno.test("gRPC messages may be as large as the service's body limit, past gRPC's 4 MiB default", async () => {
  // 9.6 MB of inputs up and 4.8 MB of output down, under a 16 MiB body limit.
  const elements = 1_200_000;
  await withTestServer({ apiKeys: KEYS, grpcPort: 0, maxBodyBytes: 16 << 20 }, async (server) => {
    const headers = { authorization: "Bearer key-a" };
    await registerCompiled(server, addModel(elements), headers, "/v1/models?name=large&version=1");
    const sdk = new GrpcClient({ address: `127.0.0.1:${server.grpcPort}`, apiKey: "key-a" });
    try {
      const ramp = Float32Array.from({ length: elements }, (_, k) => k);
      const inputs = [
        { name: "input0", datatype: "FP32", shape: [elements], data: ramp },
        {
          name: "input1",
          datatype: "FP32",
          shape: [elements],
          data: new Float32Array(elements).fill(0.5),
        },
      ];
      const result = await sdk.infer("large", inputs);
      const sum = result.outputs[0].data as Float32Array;
      strictEqual(sum.length, elements);
      strictEqual(sum[0], 0.5);
      strictEqual(sum[elements - 1], elements - 0.5);
      // Past the body limit: refused before it is decoded, as HTTP's 413.
      const over = new Float32Array(elements * 2);
      await rejects(
        sdk.infer("large", [
          { name: "input0", datatype: "FP32", shape: [elements * 2], data: over },
          { name: "input1", datatype: "FP32", shape: [elements * 2], data: over },
        ]),
        (error: GrpcCallError) => {
          strictEqual(error.code, grpc.status.RESOURCE_EXHAUSTED, error.message);
          return true;
        },
      );
    } finally {
      sdk.close();
    }
  });
});

Deno.test("a client process killed mid-stream leaves nothing held, and the service goes on", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    await serveRows(server, 1_000_000);
    const queued = () => batchQueued(server);
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "tests/grpc_stream_client.ts", String(server.grpcPort), "key-a"],
      cwd: new URL("../", import.meta.url),
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let said = "";
    while (!said.includes("sent")) {
      const { value, done } = await lines.read();
      if (done) throw new Error(`the client ended first: ${said}`);
      said += value;
    }
    for (let i = 0; i < 500 && await queued() < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    strictEqual(await queued(), 10, "ten requests wait for their batch");
    child.kill("SIGKILL");
    await child.status;
    await lines.cancel();
    for (let i = 0; i < 500 && await queued() > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    strictEqual(await queued(), 0, "their batch ran into a stream that is gone");
    const sdk = new GrpcClient({ address: `127.0.0.1:${server.grpcPort}`, apiKey: "key-a" });
    try {
      const stream = sdk.stream();
      const answer = await stream.infer("rows", [
        { name: "input0", datatype: "FP32", shape: [1], data: new Float32Array([7]) },
        { name: "input1", datatype: "FP32", shape: [1], data: new Float32Array([1]) },
      ]);
      deepStrictEqual(answer.outputs[0].data, new Float32Array([8]));
      await stream.close();
    } finally {
      sdk.close();
    }
  });
});

Deno.test("a gRPC call's deadline is its execution's: DEADLINE_EXCEEDED when it passes", async () => {
  await withTestServer({ apiKeys: KEYS, grpcPort: 0 }, async (server) => {
    // A batch that waits 2 s to fill: one request cannot finish within 200 ms.
    await serveRows(server, 2_000_000);
    const sdk = new GrpcClient({ address: `127.0.0.1:${server.grpcPort}`, apiKey: "key-a" });
    try {
      await rejects(
        sdk.infer("rows", [
          { name: "input0", datatype: "FP32", shape: [1], data: new Float32Array([1]) },
          { name: "input1", datatype: "FP32", shape: [1], data: new Float32Array([1]) },
        ], { deadlineMs: 200 }),
        (error: GrpcCallError) => {
          strictEqual(error.code, grpc.status.DEADLINE_EXCEEDED, error.message);
          return true;
        },
      );
      // The service took the call's deadline as the execution's: it failed it too.
      const missed = async () =>
        Number(
          /^nnserve_executions_total\{status="MISSED_DEADLINE_TRANSIENT"\} (\d+)/m.exec(
            await (await fetch(`${server.url}/metrics`)).text(),
          )?.[1],
        );
      for (let i = 0; i < 500 && await missed() < 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      strictEqual(await missed(), 1);
    } finally {
      sdk.close();
    }
  });
});
