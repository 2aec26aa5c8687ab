/**
 * The engines the peers benchmark compares, each behind one small interface: prepare a model
 * (ONNX bytes) at a thread count, then run it on one input. nnserve runs in process (the
 * executable the executor workers run, kernels and plan only) and over HTTP (a server
 * process, JSON with base64 tensors or raw bytes); onnxruntime-node is the native peer and
 * onnxruntime-web (WebAssembly SIMD, in a worker) the WebAssembly one; TensorFlow.js's
 * WebAssembly backend is in `tfjs_wasm.ts`. Over HTTP nnserve imports the model with its
 * extents fixed (`?shape=`) or as the file has them (extents sent with each execution), and
 * its HTTP peer is the server a user would write around onnxruntime-node
 * (`ort_http_server.ts`). Raw-body HTTP engines also give a server with its defaults for the
 * throughput runs (`throughput.ts`).
 */
import * as ort from "onnxruntime-node";
import { convertOnnx } from "../../converter/onnx/convert.ts";
import { Executable } from "../../driver/execution/executable.ts";
import { buildModel } from "../../driver/model/model.ts";
import { prepareModel } from "../../driver/compilation/prepare.ts";
import { partitionModel } from "../../driver/compilation/partitioner/model_partition.ts";
import { discoverDevices } from "../../driver/devices/device_list.ts";
import { lanesReady, privateThreadBudget, setThreadBudget } from "../../kernels/compute_lanes.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnServer } from "../server_process.ts";

/** The devices nnserve's rows use: every CPU device (the software gpu would be slower). */
const CPU_DEVICES = ["cpu-simd", "cpu-reference", "onnxruntime"];

/**
 * A model an engine cannot take (operations a peer does not rebuild, a form of the model
 * nnserve refuses to import): its rows are left out, with this message printed instead.
 */
export class NotBuildable extends Error {}

/** One input of a model run: its name, shape and float32 values. */
export interface PeerInput {
  name: string;
  shape: number[];
  data: Float32Array;
}

/** A prepared model in one engine. */
export interface PeerRun {
  /** Runs once; resolves to the first output's values. */
  run(): Promise<Float32Array>;
  /** For HTTP runs: the driver's own time of the last run (ms), to split off HTTP. */
  lastDriverMs?: () => number;
  close(): Promise<void>;
}

export interface Engine {
  name: string;
  /** The thread counts it can run at; all of the benchmark's when omitted. */
  threadCounts?: readonly number[];
  /**
   * Whether it takes the model as published, extents left symbolic (the benchmark's
   * symbolic-batch bytes where a model has them), rather than the fixed-extent bytes.
   */
  opensExtents?: boolean;
  prepare(model: Uint8Array, input: PeerInput, threads: number): Promise<PeerRun>;
  /**
   * Raw-body HTTP engines: a server for `model` with its defaults (executors, threads), for
   * the throughput runs.
   */
  endpoint?(model: Uint8Array, input: PeerInput): Promise<RawEndpoint>;
}

export const ONNXRUNTIME_NODE: Engine = {
  name: "onnxruntime-node",
  async prepare(model, input, threads) {
    const session = await ort.InferenceSession.create(model, {
      intraOpNumThreads: threads,
      interOpNumThreads: 1,
      executionMode: "sequential",
      graphOptimizationLevel: "all",
    });
    const feeds = { [input.name]: new ort.Tensor("float32", input.data, input.shape) };
    const output = session.outputNames[0];
    return {
      async run() {
        const result = await session.run(feeds);
        return result[output].data as Float32Array;
      },
      close: () => session.release(),
    };
  },
};

export const ONNXRUNTIME_WEB: Engine = {
  name: "onnxruntime-web (wasm)",
  async prepare(model, input, threads) {
    const worker = new Worker(new URL("./ort_web_worker.ts", import.meta.url), {
      type: "module",
    });
    const next = () =>
      new Promise<{ output?: Float32Array; error?: string }>((resolve) => {
        worker.onmessage = (event) => resolve(event.data);
      });
    const answer = (reply: { output?: Float32Array; error?: string }) => {
      if (reply.error) throw new Error(`onnxruntime-web: ${reply.error}`);
      return reply.output!;
    };
    const ready = next();
    worker.postMessage({ model, input, threads });
    answer(await ready);
    return {
      async run() {
        const reply = next();
        worker.postMessage("run");
        return answer(await reply);
      },
      close() {
        worker.terminate();
        return Promise.resolve();
      },
    };
  },
};

/**
 * nnserve in this process through the driver's plan API (no HTTP, no executor thread): the
 * model imported with `?shape=`'s extents, partitioned over `devices` as the service does,
 * kernel threads from a budget of the row's threads.
 */
function nnserveInProcess(name: string, devices: readonly string[]): Engine {
  return {
    name,
    async prepare(model, input, threads) {
      const conversion = convertOnnx(model, { shapes: { [input.name]: input.shape } });
      const built = buildModel(conversion.model);
      const found = await discoverDevices({ gpu: false, names: devices });
      const { placement } = partitionModel(built, found.list, { costs: found.costs });
      const prepared = prepareModel(built, {
        preference: "FAST_SINGLE_ANSWER",
        priority: "MEDIUM",
      }, placement);
      setThreadBudget(threads > 1 ? privateThreadBudget(threads) : undefined);
      const executable = new Executable(prepared);
      const inputs = [{ data: input.data, shape: input.shape }];
      await executable.runAsync(inputs);
      // Compute lanes start with the first split of a cpu-simd kernel.
      const simd = prepared.steps.some((step) => step.device === "cpu-simd");
      if (threads > 1 && simd) await lanesReady(threads - 1, 10_000);
      return {
        run: async () => (await executable.runAsync(inputs))[0].data as Float32Array,
        close() {
          executable.release();
          setThreadBudget(undefined);
          return Promise.resolve();
        },
      };
    },
  };
}

/** nnserve's default CPU plan: its kernels and onnxruntime, placed by the partitioner. */
export const NNSERVE_IN_PROCESS = nnserveInProcess("nnserve in process", [
  ...CPU_DEVICES,
]);
/** nnserve's own kernels alone (WebAssembly SIMD and the reference). */
export const NNSERVE_OWN_KERNELS = nnserveInProcess("nnserve in process, own kernels", [
  "cpu-simd",
  "cpu-reference",
]);

/** How an HTTP run sends its input and receives its output. */
type HttpEncoding = "base64" | "binary";

/**
 * A server taking a model's one input as a raw body (`application/octet-stream`, with
 * `headers`) at `url` and answering its first output's raw bytes: what the throughput runs
 * load.
 */
export interface RawEndpoint {
  url: string;
  headers: Record<string, string>;
  /** The server's process, where the benchmark started it (its threads' CPU is read). */
  pid?: number;
  close(): Promise<void>;
}

/** Options of an nnserve HTTP engine. */
interface NnserveHttpOptions {
  /**
   * Imports without `?shape=` (the model's extents as the file has them, the symbolic-batch
   * bytes of MobileNetV2) and sends the input's extents with each execution
   * (`Input-Dimensions`).
   */
  open?: boolean;
}

/**
 * An nnserve server process with `model` imported and compiled on the CPU devices;
 * `env` sets its executors (the service's defaults when empty).
 */
export async function nnserveCompiled(
  model: Uint8Array,
  input: PeerInput,
  env: Record<string, string>,
  open: boolean,
  compilationOptions: Record<string, unknown> = {},
) {
  const server = await spawnServer(env);
  try {
    const post = async (path: string, body: BodyInit, type = "application/json") => {
      const response = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: { "content-type": type },
        body,
      });
      const json = await response.json();
      if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
      return json;
    };
    const shape = `${input.name}:${input.shape.join("x")}`;
    const importPath = open
      ? "/v1/models?name=peer"
      : `/v1/models?name=peer&shape=${encodeURIComponent(shape)}`;
    const importResponse = await fetch(`${server.url}${importPath}`, {
      method: "POST",
      headers: { "content-type": "application/onnx" },
      body: model as Uint8Array<ArrayBuffer>,
    });
    const imported = await importResponse.json();
    if (open && importResponse.status === 400) {
      // A model whose extents nnserve cannot leave to execution: say so instead of a row.
      throw new NotBuildable(`nnserve refuses it without ?shape=: ${imported.message}`);
    }
    if (!importResponse.ok) {
      throw new Error(`${importPath}: ${importResponse.status} ${JSON.stringify(imported)}`);
    }
    const compilation = await post(
      "/v1/compilations",
      // The CPU devices, as the in-process run: this machine's software GPU (llvmpipe) is
      // slower, and calibration noise must not move steps onto it between runs.
      JSON.stringify({
        model: imported.id,
        preference: "FAST_SINGLE_ANSWER",
        devices: CPU_DEVICES,
        ...compilationOptions,
      }),
    );
    return { server, post, executions: `/v1/compilations/${compilation.id}/executions` };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** The headers of nnserve's raw execution form (`Input-Dimensions` when `open`). */
export function rawHeaders(input: PeerInput, open: boolean): Record<string, string> {
  return {
    "content-type": "application/octet-stream",
    accept: "application/octet-stream",
    ...(open ? { "input-dimensions": input.shape.join(",") } : {}),
  };
}

/** nnserve in a server process of its own, called over HTTP with one encoding. */
function nnserveHttp(
  name: string,
  encoding: HttpEncoding,
  options: NnserveHttpOptions = {},
): Engine {
  const open = options.open ?? false;
  return {
    name,
    opensExtents: open,
    async prepare(model, input, threads) {
      const { server, post, executions } = await nnserveCompiled(model, input, {
        NNSERVE_THREADS: String(threads),
        NNSERVE_WORKERS: "1",
      }, open);
      let driverMs = 0;
      const run = encoding === "base64"
        ? (() => {
          const body = JSON.stringify({
            inputs: [{
              base64: new Uint8Array(input.data.buffer).toBase64(),
              ...(open ? { dimensions: input.shape } : {}),
            }],
            outputEncoding: "base64",
            measureTiming: true,
          });
          return async () => {
            const result = await post(executions, body);
            driverMs = result.timing.inDriverUs / 1000;
            const bytes = Uint8Array.fromBase64(result.outputs[0].base64);
            return new Float32Array(bytes.buffer);
          };
        })()
        : (() => {
          // The raw form: the input's bytes as the body, the output's bytes as the answer.
          const body = new Uint8Array(input.data.buffer as ArrayBuffer);
          const url = `${server.url}${executions}?measureTiming=true`;
          const headers = rawHeaders(input, open);
          return async () => {
            const response = await fetch(url, { method: "POST", headers, body });
            if (!response.ok) throw new Error(`${executions}: ${await response.text()}`);
            const timing = /driver;dur=([\d.]+)/.exec(response.headers.get("server-timing") ?? "");
            driverMs = Number(timing?.[1]);
            return new Float32Array(await response.arrayBuffer());
          };
        })();
      return { run, lastDriverMs: () => driverMs, close: () => server.stop() };
    },
    endpoint: encoding === "binary"
      ? async (model, input) => {
        // The service's default executors (workers and threads), as a user gets them.
        const { server, executions } = await nnserveCompiled(model, input, {}, open);
        return {
          url: `${server.url}${executions}`,
          headers: rawHeaders(input, open),
          pid: server.pid,
          close: () => server.stop(),
        };
      }
      : undefined,
  };
}

export const NNSERVE_HTTP_BASE64 = nnserveHttp("nnserve HTTP (JSON, base64)", "base64");
export const NNSERVE_HTTP_BINARY = nnserveHttp("nnserve HTTP (binary)", "binary");
export const NNSERVE_HTTP_BINARY_OPEN = nnserveHttp(
  "nnserve HTTP (binary, extents at execution)",
  "binary",
  { open: true },
);

/** The HTTP servers a user would write around onnxruntime: the same protocol in two languages. */
export type OrtServerLanguage = "node" | "python";

/**
 * `ort_http_server.ts` (Deno running a `node:http` program) or `ort_http_server.py` (Python's
 * onnxruntime where it is installed) in a process of its own, with `model` written to a
 * temporary file; `threads` sets its session's intra-op threads, onnxruntime's default when
 * omitted.
 */
async function spawnOrtServer(
  model: Uint8Array,
  threads?: number,
  language: OrtServerLanguage = "node",
) {
  const dir = await Deno.makeTempDir({ prefix: "nnserve-bench-ort-" });
  const path = join(dir, "model.onnx");
  await Deno.writeFile(path, model);
  const root = new URL("../../", import.meta.url);
  const args = [path, "0", ...(threads === undefined ? [] : [String(threads)])];
  const [program, programArgs] = language === "python"
    ? ["python3", [fileURLToPath(new URL("./ort_http_server.py", import.meta.url)), ...args]]
    : [Deno.execPath(), [
      "run",
      "-A",
      "--config",
      fileURLToPath(new URL("deno.json", root)),
      fileURLToPath(new URL("./ort_http_server.ts", import.meta.url)),
      ...args,
    ]];
  const child = new Deno.Command(program, {
    args: programArgs,
    cwd: fileURLToPath(root),
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const stop = async () => {
    try {
      child.kill("SIGTERM");
    } catch { /* already exited */ }
    await child.status;
    await Deno.remove(dir, { recursive: true });
  };
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await lines.read();
    if (done) {
      await stop();
      throw new Error(`the onnxruntime ${language} server exited before listening:\n${seen}`);
    }
    seen += value;
    url = /listening on (http:\/\/\S+)/.exec(seen)?.[1];
  }
  (async () => {
    while (!(await lines.read()).done) { /* discard */ }
  })();
  return { url, pid: child.pid, stop };
}

/**
 * The HTTP server a user would write around onnxruntime-node (`ort_http_server.ts`): raw
 * float32 bodies with `Input-Dimensions`, the first output's raw bytes back. Latency rows set
 * its session's intra-op threads to the row's; throughput runs it with the defaults.
 */
export const ONNXRUNTIME_NODE_HTTP: Engine = {
  name: "onnxruntime-node HTTP server",
  opensExtents: true,
  async prepare(model, input, threads) {
    const server = await spawnOrtServer(model, threads);
    const body = new Uint8Array(input.data.buffer as ArrayBuffer);
    const headers = ortServerHeaders(input);
    return {
      async run() {
        const response = await fetch(server.url, { method: "POST", headers, body });
        if (!response.ok) throw new Error(`onnxruntime-node server: ${await response.text()}`);
        return new Float32Array(await response.arrayBuffer());
      },
      close: () => server.stop(),
    };
  },
  endpoint: (model, input) => ortServerEndpoint(model, input, "node"),
};

/** A peer server with onnxruntime's defaults, for throughput runs. */
export async function ortServerEndpoint(
  model: Uint8Array,
  input: PeerInput,
  language: OrtServerLanguage,
): Promise<RawEndpoint> {
  const server = await spawnOrtServer(model, undefined, language);
  return {
    url: server.url,
    headers: ortServerHeaders(input),
    pid: server.pid,
    close: () => server.stop(),
  };
}

/** What the peer servers take: the input's raw bytes and its extents. */
function ortServerHeaders(input: PeerInput): Record<string, string> {
  return { "content-type": "application/octet-stream", "input-dimensions": input.shape.join(",") };
}
