/**
 * A real nnserve instance for end-to-end tests: 127.0.0.1, a random port, Deno KV and
 * model files in a fresh temporary directory.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { type RunningServer, type ServerConfig, startServer } from "../server.ts";
import { OutputTail } from "./output_tail.ts";
import { float32Tensor, int32Scalar } from "../tools/model_json.ts";

export { float32Tensor, int32Scalar };

/** A running test server and its data directory. */
export interface TestServer extends RunningServer {
  dataDir: string;
  /** JSON request helper: returns status and parsed body. */
  request(method: string, path: string, body?: unknown, headers?: HeadersInit): Promise<{
    status: number;
    body: Record<string, unknown>;
  }>;
}

/** Imports ONNX bytes as they are (`POST /v1/models`, 201 asserted); returns the model. */
export async function importOnnx(
  server: { url: string },
  bytes: Uint8Array,
): Promise<Record<string, unknown> & { id: string }> {
  const imported = await fetch(`${server.url}/v1/models`, {
    method: "POST",
    headers: { "content-type": "application/onnx" },
    body: new Uint8Array(bytes),
  });
  const model = await imported.json();
  strictEqual(imported.status, 201, JSON.stringify(model));
  return model;
}

/** Starts a server; pass `dataDir` to restart on the state of an earlier one. */
export async function startTestServer(
  options: Partial<ServerConfig> = {},
): Promise<TestServer> {
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const server = await startServer({
    hostname: "127.0.0.1",
    port: 0,
    verbose: false,
    workers: 2,
    // The gpu device costs a second of start-up per test process (context and calibration);
    // tests of the gpu device ask for it.
    gpu: false,
    ...options,
    dataDir,
  });
  return {
    ...server,
    dataDir,
    async request(method, path, body, headers) {
      const response = await fetch(`${server.url}${path}`, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : {} };
    },
  };
}

/** Runs `fn` against a fresh server, then closes it and removes its data directory. */
export async function withTestServer(
  options: Partial<ServerConfig>,
  fn: (server: TestServer) => Promise<void>,
): Promise<void> {
  const server = await startTestServer(options);
  try {
    await fn(server);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

/** A one-operation float model: out = a + b (both [n] float32 inputs), for quick checks. */
export function addModel(n: number) {
  const tensor = { type: "TENSOR_FLOAT32", dimensions: [n], scale: 0, zeroPoint: 0 };
  return {
    operands: [
      { ...tensor, lifetime: "MODEL_INPUT" },
      { ...tensor, lifetime: "MODEL_INPUT" },
      {
        type: "INT32",
        dimensions: [],
        scale: 0,
        zeroPoint: 0,
        lifetime: "CONSTANT_COPY",
        value: [0],
      },
      { ...tensor, lifetime: "MODEL_OUTPUT" },
    ],
    operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0, 1],
    outputIndexes: [3],
  };
}

/** `addModel` with MUL instead of ADD: a second model of the same signature. */
export function mulModel(n: number) {
  const model = addModel(n);
  return { ...model, operations: [{ ...model.operations[0], type: "MUL" }] };
}

/** Writes files (text or bytes) under `dir`, creating their folders. */
export async function writeTree(dir: string, files: Record<string, string | Uint8Array>) {
  for (const [path, content] of Object.entries(files)) {
    const full = `${dir}/${path}`;
    await Deno.mkdir(full.slice(0, full.lastIndexOf("/")), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(full, content);
    else await Deno.writeFile(full, content);
  }
}

/**
 * MAX_POOL_2D over a 1 x side x side x 1 float32 input with a filter x filter window, stride
 * 1, SAME padding (implicit form): side² x filter² taps, so a small model can run for seconds
 * on the reference kernel.
 */
export function maxPoolModel(side: number, filter: number) {
  const image = { type: "TENSOR_FLOAT32", dimensions: [1, side, side, 1], scale: 0, zeroPoint: 0 };
  return {
    operands: [
      { ...image, lifetime: "MODEL_INPUT" },
      int32Scalar(1), // SAME
      int32Scalar(1),
      int32Scalar(1),
      int32Scalar(filter),
      int32Scalar(filter),
      int32Scalar(0),
      { ...image, lifetime: "MODEL_OUTPUT" },
    ],
    operations: [{ type: "MAX_POOL_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  };
}

/**
 * `deno <args>` in the project's root with `env` (and NO_COLOR): its exit code, its stderr,
 * and all it printed (stdout then stderr).
 */
export async function runDeno(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; text: string; stderr: string }> {
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: new URL("../", import.meta.url),
    env: { ...env, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  return { code: output.code, text: new TextDecoder().decode(output.stdout) + stderr, stderr };
}

/** `deno run -A main.ts` on a data directory, loopback and a free port, output piped. */
export function mainProcess(dataDir: string, env: Record<string, string> = {}): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "main.ts"],
    cwd: new URL("../", import.meta.url),
    env: {
      NNSERVE_DATA_DIR: dataDir,
      PORT: "0",
      HOST: "127.0.0.1",
      NNSERVE_WORKERS: "1",
      NO_COLOR: "1",
      ...env,
    },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/** main.ts running in a process of its own, as {@link withMainProcess} hands it over. */
export interface MainProcess {
  url: string;
  child: Deno.ChildProcess;
  dataDir: string;
}

/**
 * Runs `fn` against `main.ts` in a process of its own (its memory and CPU are its alone) with
 * `env` (and NNSERVE_GPU=0), on `dataDir` or a new one (removed after); the process is
 * killed after `fn`, which may kill it first.
 */
export async function withMainProcess(
  options: { env?: Record<string, string>; dataDir?: string },
  fn: (service: MainProcess) => Promise<void>,
): Promise<void> {
  const dataDir = options.dataDir ?? await Deno.makeTempDir({ prefix: "nnserve-test-" });
  const child = mainProcess(dataDir, { NNSERVE_GPU: "0", ...options.env });
  const output = new OutputTail(child.stdout);
  try {
    const line = await output.waitFor(/listening on http:\S+/, { timeoutMs: 30_000 });
    await fn({ url: /listening on (http:\S+)/.exec(line.text)![1], child, dataDir });
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await child.status;
    await child.stderr.cancel();
    await output.done;
    if (options.dataDir === undefined) await Deno.remove(dataDir, { recursive: true });
  }
}

/** The exit status and output of a child, or undefined (and the child killed) past `ms`. */
export async function finishWithin(child: Deno.ChildProcess, ms: number) {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), ms));
  const output = child.output();
  const first = await Promise.race([output, late]);
  clearTimeout(timer);
  if (first === "late") {
    child.kill("SIGKILL");
    await output;
    return undefined;
  }
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  return { code: first.code, stdout: decode(first.stdout), stderr: decode(first.stderr) };
}

/** An execution output as the JSON API returns it. */
export interface JsonOutput {
  dimensions: number[];
  data: number[];
}

/**
 * Registers `model` (at `path`: a name and version go in its query) and compiles it on
 * cpu-reference, as the client `headers` name; both ids.
 */
export async function registerCompiled(
  server: TestServer,
  model: unknown,
  headers: Record<string, string> = {},
  path = "/v1/models",
): Promise<{ model: string; compilation: string }> {
  const registered = await server.request("POST", path, model, headers);
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const compilation = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
    devices: ["cpu-reference"],
  }, headers);
  strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
  return { model: String(registered.body.id), compilation: String(compilation.body.id) };
}

/**
 * Registers a one-operation model, checks cpu-reference reports it supported, and compiles
 * it there; returns a function running one execution with the given inputs.
 */
export async function compileOnReference(server: TestServer, model: unknown) {
  const registered = await server.request("POST", "/v1/models", model);
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  const support = await server.request(
    "POST",
    `/v1/models/${registered.body.id}/supported-operations`,
    {},
  );
  const devices = support.body.devices as { name: string; supported: boolean[] }[];
  deepStrictEqual(devices.find((d) => d.name === "cpu-reference")?.supported, [true]);
  const compilation = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
    devices: ["cpu-reference"],
  });
  strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
  return async (inputs: { data: number[]; dimensions?: number[] }[]): Promise<JsonOutput[]> => {
    const execution = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs },
    );
    strictEqual(execution.status, 200, JSON.stringify(execution.body));
    return execution.body.outputs as JsonOutput[];
  };
}

const SLOW_SIDE = 64, SLOW_DEPTH = 32;

/** Elements of {@link slowConvModel}'s input ([1, 64, 64, 32] float32). */
export const SLOW_INPUT_ELEMENTS = SLOW_SIDE * SLOW_SIDE * SLOW_DEPTH;

/**
 * `layers` 3x3 convolutions of [1, 64, 64, 32]: about 60 ms each on the reference kernels
 * here, to keep an executor busy (compile it with `devices: ["cpu-reference"]`).
 */
export function slowConvModel(layers: number) {
  const operands: unknown[] = [float32Tensor([1, SLOW_SIDE, SLOW_SIDE, SLOW_DEPTH], "MODEL_INPUT")];
  const operations: unknown[] = [];
  const scalars = [1, 1, 1, 0].map((v) => operands.push(int32Scalar(v)) - 1);
  const filterValues = Array.from(
    { length: SLOW_DEPTH * 9 * SLOW_DEPTH },
    (_, i) => ((i * 7919) % 200 - 100) / 1000,
  );
  let x = 0;
  for (let layer = 0; layer < layers; layer++) {
    const filter = operands.push(
      float32Tensor([SLOW_DEPTH, 3, 3, SLOW_DEPTH], "CONSTANT_COPY", filterValues),
    ) - 1;
    const bias = operands.push(
      float32Tensor([SLOW_DEPTH], "CONSTANT_COPY", Array(SLOW_DEPTH).fill(0)),
    ) - 1;
    const last = layer === layers - 1;
    const y = operands.push(
      float32Tensor(
        [1, SLOW_SIDE, SLOW_SIDE, SLOW_DEPTH],
        last ? "MODEL_OUTPUT" : "TEMPORARY_VARIABLE",
      ),
    ) - 1;
    operations.push({ type: "CONV_2D", inputs: [x, filter, bias, ...scalars], outputs: [y] });
    x = y;
  }
  return { operands, operations, inputIndexes: [0], outputIndexes: [x] };
}

/**
 * Reads one series of `GET /metrics`, named as it is printed (`name{label="value",...}`);
 * undefined when absent.
 */
export async function metric(baseUrl: string, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The batch-size histogram's count and sum: batched runs and their rows, every compilation's. */
export async function batchRuns(server: TestServer): Promise<{ runs: number; rows: number }> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  const total = (suffix: string) =>
    text.split("\n")
      .filter((line) => line.startsWith(`nnserve_batch_size_${suffix}{`))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  return { runs: total("count"), rows: total("sum") };
}
