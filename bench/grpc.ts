/**
 * The Open Inference Protocol over gRPC against its HTTP form and nnserve's bursts
 * (`deno task bench:grpc`): for a tiny model (ADD of two float32[2]) and MobileNetV2 (one
 * 224x224 image), requests one at a time and pipelined, all against one server process
 * measured in the same run: `/v2` infer over HTTP (raw bytes in the binary tensor
 * extension), gRPC ModelInfer with raw contents, gRPC ModelStreamInfer, and a burst; for the
 * tiny model also a bare WebSocket echo of its input's bytes in a process of its own, the
 * floor of a burst's round trip on this machine, and a bare TCP echo, the floor of any round
 * trip between two processes here, and a burst on a second server with the polling window
 * off (NNSERVE_BURST_POLLING_WINDOW=0). The forms of a model are measured in turn, `--rounds N`
 * rounds of `--seconds S` each (default 5 of 1 s: this host's slow spells move a round by
 * half), a row the medians of its rounds. With
 * `--write`, docs/grpc-performance.md gets the table.
 */
import { Buffer } from "node:buffer";
import * as grpc from "@grpc/grpc-js";
import { NnClient } from "../client/mod.ts";
import { GRPCInferenceService } from "../client/grpc.ts";
import { INFERENCE_HEADER_LENGTH } from "../routes/binary_tensors.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { MOBILENET_V2_INPUT, mobilenetV2Onnx } from "./mobilenet_v2_onnx.ts";
import { spawnServer } from "./server_process.ts";
import { spawnEcho } from "./peers/rest.ts";
import { median } from "./peers/timing.ts";

const SECONDS = Number(Deno.args.find((a) => a.startsWith("--seconds="))?.slice(10) ?? 1);
const ROUNDS = Number(Deno.args.find((a) => a.startsWith("--rounds="))?.slice(9) ?? 5);
const PIPELINE = 16;

interface Case {
  name: string;
  model: string;
  inputs: { name: string; shape: number[]; data: Float32Array }[];
}

/** A free port for the gRPC endpoint. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr;
  listener.close();
  return port;
}

/** One round of `run`: requests/s and median µs one at a time, requests/s `PIPELINE` at once. */
async function rates(run: () => Promise<unknown>) {
  const end = (ms: number) => performance.now() + ms;
  for (const stop = end(300); performance.now() < stop;) await run();
  const times: number[] = [];
  for (const stop = end(SECONDS * 1000); performance.now() < stop;) {
    const started = performance.now();
    await run();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  let done = 0;
  const started = performance.now();
  const stop = end(SECONDS * 1000);
  await Promise.all(Array.from({ length: PIPELINE }, async () => {
    while (performance.now() < stop) {
      await run();
      done++;
    }
  }));
  return {
    oneAtATimeUs: times[times.length >> 1] * 1000,
    perSecond: times.length / SECONDS,
    pipelinedPerSecond: done / ((performance.now() - started) / 1000),
  };
}

/** The form of a burst on the server without the polling window. */
const UNPOLLED_BURST = "burst, polling window off (NNSERVE_BURST_POLLING_WINDOW=0)";

const grpcPort = freePort();
const server = await spawnServer({ NNSERVE_GRPC_PORT: String(grpcPort) });
const client = new NnClient({ baseUrl: server.url });
/** A server that never polls for a burst's next request: what the window saves. */
const unpolled = await spawnServer({ NNSERVE_BURST_POLLING_WINDOW: "0" });
const stub = new GRPCInferenceService(
  `127.0.0.1:${grpcPort}`,
  grpc.credentials.createInsecure(),
) as unknown as grpc.Client & {
  ModelInfer(request: unknown, callback: (error: Error | null, answer: unknown) => void): void;
  ModelStreamInfer(): grpc.ClientDuplexStream<unknown, { error_message: string }>;
};

const post = async (path: string, body: BodyInit, type: string, on = server) => {
  const response = await fetch(`${on.url}${path}`, {
    method: "POST",
    headers: { "content-type": type },
    body,
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${path}: ${JSON.stringify(json)}`);
  return json;
};

const adder = {
  operands: [
    ...[0, 1].map(() => ({ type: "TENSOR_FLOAT32", dimensions: [2], lifetime: "MODEL_INPUT" })),
    { type: "INT32", dimensions: [], lifetime: "CONSTANT_COPY", value: [0] },
    { type: "TENSOR_FLOAT32", dimensions: [2], lifetime: "MODEL_OUTPUT" },
  ],
  operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
  inputIndexes: [0, 1],
  outputIndexes: [3],
};
const tiny = await post(
  "/v1/models?name=adder&version=1",
  JSON.stringify(adder),
  "application/json",
);
await post("/v1/compilations", JSON.stringify({ model: tiny.id }), "application/json");
const unpolledTiny = await post("/v1/models", JSON.stringify(adder), "application/json", unpolled);
const mobilenet = await post(
  `/v1/models?name=mobilenet&version=1&shape=${
    encodeURIComponent(`${MOBILENET_V2_INPUT.name}:${MOBILENET_V2_INPUT.dims.join("x")}`)
  }`,
  mobilenetV2Onnx(1) as Uint8Array<ArrayBuffer>,
  "application/onnx",
);
await post("/v1/compilations", JSON.stringify({ model: mobilenet.id }), "application/json");

const CASES: Case[] = [
  {
    name: "ADD of two float32[2]",
    model: "adder",
    inputs: [
      { name: "input0", shape: [2], data: new Float32Array([1, 2]) },
      { name: "input1", shape: [2], data: new Float32Array([10, 20]) },
    ],
  },
  {
    name: "MobileNetV2 1.0 224x224",
    model: "mobilenet",
    inputs: [{
      name: MOBILENET_V2_INPUT.name,
      shape: [...MOBILENET_V2_INPUT.dims],
      data: Float32Array.from(seededFloats(3 * 224 * 224, 7, 2)),
    }],
  },
];

/**
 * A round trip of `bytes` through the echo process's bare TCP echo (TCP_NODELAY); requests
 * may overlap: writes go out in order, and each answer is the next `bytes.byteLength` bytes
 * read.
 */
async function echoTcp(port: number, bytes: Uint8Array) {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  conn.setNoDelay(true);
  const waiting: (() => void)[] = [];
  (async () => {
    const buffer = new Uint8Array(64 * 1024);
    let received = 0;
    for (;;) {
      const n = await conn.read(buffer).catch(() => null);
      if (n === null) return;
      received += n;
      while (received >= bytes.byteLength && waiting.length > 0) {
        received -= bytes.byteLength;
        waiting.shift()!();
      }
    }
  })();
  let writing = Promise.resolve();
  const write = async () => {
    for (let at = 0; at < bytes.byteLength;) at += await conn.write(bytes.subarray(at));
  };
  return {
    run: () =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        writing = writing.then(write);
      }),
    close: () => conn.close(),
  };
}

/** A round trip of `bytes` through a bare WebSocket echo (the Hono echo's `/ws`). */
async function echoSocket(url: string, bytes: Uint8Array) {
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/ws`);
  socket.binaryType = "arraybuffer";
  await new Promise((resolve, reject) => {
    socket.onopen = resolve;
    socket.onerror = reject;
  });
  // Echoes come back in the order sent.
  const waiting: ((answer: unknown) => void)[] = [];
  socket.onmessage = (event) => waiting.shift()!(event.data);
  return {
    run: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        socket.send(bytes);
      }),
    close: () => socket.close(),
  };
}

const echo = await spawnEcho();
const rows: string[] = [];
for (const c of CASES) {
  const bytes = c.inputs.map((i) => new Uint8Array(i.data.buffer));
  const header = new TextEncoder().encode(JSON.stringify({
    inputs: c.inputs.map((i, k) => ({
      name: i.name,
      shape: i.shape,
      datatype: "FP32",
      parameters: { binary_data_size: bytes[k].byteLength },
    })),
    parameters: { binary_data_output: true },
  }));
  const inputBytes = bytes.flatMap((b) => [...b]);
  const body = new Uint8Array([...header, ...inputBytes]);
  const http = () =>
    fetch(`${server.url}/v2/models/${c.model}/infer`, {
      method: "POST",
      headers: {
        "content-type": "application/octet-stream",
        [INFERENCE_HEADER_LENGTH]: String(header.byteLength),
      },
      body,
    }).then((r) => r.arrayBuffer());
  const request = {
    model_name: c.model,
    inputs: c.inputs.map((i) => ({ name: i.name, datatype: "FP32", shape: i.shape })),
    raw_input_contents: bytes.map((b) => Buffer.from(b)),
  };
  const unary = () =>
    new Promise((resolve, reject) =>
      stub.ModelInfer(request, (error, answer) => error ? reject(error) : resolve(answer))
    );
  // One stream for the run; answers come back in request order.
  const stream = stub.ModelStreamInfer();
  const waiting: ((answer: unknown) => void)[] = [];
  stream.on("data", (answer) => waiting.shift()!(answer));
  const streamed = () =>
    new Promise((resolve) => {
      waiting.push(resolve);
      stream.write(request);
    });
  // A compilation of its own for the burst (the SDK's).
  const compilation = await client.compile(c.model === "adder" ? tiny.id : mobilenet.id);
  const burst = await compilation.burst();
  const bursted = () => burst.compute(c.inputs.map((i) => i.data));
  // The floors where the answer is as small as the question (not MobileNetV2's image).
  const floors = c.model === "adder"
    ? [
      await echoSocket(echo.url, new Uint8Array(inputBytes)),
      await echoTcp(echo.tcpPort, new Uint8Array(inputBytes)),
    ]
    : [];
  const unpolledBurst = c.model === "adder"
    ? await (await new NnClient({ baseUrl: unpolled.url }).compile(unpolledTiny.id)).burst()
    : undefined;
  const forms: [form: string, run: () => Promise<unknown>][] = [
    ["/v2 HTTP (binary tensors)", http],
    ["gRPC ModelInfer (raw contents)", unary],
    ["gRPC ModelStreamInfer", streamed],
    ["burst", bursted],
  ];
  if (unpolledBurst) {
    forms.push([
      UNPOLLED_BURST,
      () => unpolledBurst.compute(c.inputs.map((i) => i.data)),
    ]);
  }
  if (floors.length > 0) {
    forms.push(
      ["bare WebSocket echo of the input's bytes", floors[0].run],
      ["bare TCP echo of the input's bytes (no WebSocket)", floors[1].run],
    );
  }
  // Rounds in turn, so that a slow spell of the machine falls on every form alike.
  const measured = forms.map(() => [] as Awaited<ReturnType<typeof rates>>[]);
  for (let round = 0; round < ROUNDS; round++) {
    for (const [k, [, run]] of forms.entries()) measured[k].push(await rates(run));
  }
  for (const [k, [form]] of forms.entries()) {
    const r = measured[k];
    const oneAtATime = r.map((x) => x.oneAtATimeUs);
    rows.push(
      `| ${c.name} | ${form} | ${median(oneAtATime).toFixed(0)} | ` +
        `${oneAtATime.map((us) => us.toFixed(0)).join(", ")} | ` +
        `${median(r.map((x) => x.perSecond)).toFixed(0)} | ` +
        `${median(r.map((x) => x.pipelinedPerSecond)).toFixed(0)} |`,
    );
    console.log(rows[rows.length - 1]);
  }
  stream.end();
  await burst.close();
  await unpolledBurst?.close();
  for (const floor of floors) floor.close();
}
stub.close();
await server.stop();
await unpolled.stop();
await echo.stop();

const table = [
  `| model | form | one at a time: median µs | by round | requests/s | ${PIPELINE} in flight: ` +
  "requests/s |",
  "| --- | --- | --: | --: | --: | --: |",
  ...rows,
].join("\n");
console.log(`\n${table}`);
if (Deno.args.includes("--write")) {
  await Deno.writeTextFile(
    new URL("../docs/grpc-performance.md", import.meta.url),
    `# The Open Inference Protocol: gRPC, HTTP and bursts\n\nWritten by \`deno task bench:grpc ` +
      `--write\` (${new Date().toISOString().slice(0, 10)}, ${navigator.hardwareConcurrency} ` +
      `cores): one server process,\nthe client in another; the forms of a model measured in ` +
      `turn, ${ROUNDS} rounds of ${SECONDS} s each\n(after a warm-up each), a row the medians ` +
      `of its rounds.\n\n${table}\n`,
  );
}
