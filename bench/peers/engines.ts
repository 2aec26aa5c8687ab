/**
 * The engines the peers benchmark compares, each behind one small interface: prepare a model
 * (ONNX bytes) at a thread count, then run it on one input. nnserve runs in process (the
 * executable the executor workers run, kernels and plan only) and over HTTP (a server
 * process, JSON with base64 tensors or raw bytes); onnxruntime-node is the native peer and
 * onnxruntime-web (WebAssembly SIMD, in a worker) the WebAssembly one; TensorFlow.js's
 * WebAssembly backend is in `tfjs_wasm.ts`.
 */
import * as ort from "onnxruntime-node";
import { convertOnnx } from "../../converter/onnx/convert.ts";
import { Executable } from "../../driver/execution/executable.ts";
import { buildModel } from "../../driver/model/model.ts";
import { prepareModel } from "../../driver/compilation/prepare.ts";
import { lanesReady, privateThreadBudget, setThreadBudget } from "../../kernels/compute_lanes.ts";
import { spawnServer } from "../server_process.ts";

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
  prepare(model: Uint8Array, input: PeerInput, threads: number): Promise<PeerRun>;
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

export const NNSERVE_IN_PROCESS: Engine = {
  name: "nnserve in process",
  async prepare(model, input, threads) {
    const conversion = convertOnnx(model, { shapes: { [input.name]: input.shape } });
    const prepared = prepareModel(buildModel(conversion.model), {
      preference: "FAST_SINGLE_ANSWER",
      priority: "MEDIUM",
    });
    const executable = new Executable(prepared);
    setThreadBudget(threads > 1 ? privateThreadBudget(threads) : undefined);
    const inputs = [{ data: input.data, shape: input.shape }];
    executable.run(inputs);
    if (threads > 1) await lanesReady(threads - 1, 10_000);
    return {
      run: () => Promise.resolve(executable.run(inputs)[0].data as Float32Array),
      close() {
        setThreadBudget(undefined);
        return Promise.resolve();
      },
    };
  },
};

/** How an HTTP run sends its input and receives its output. */
type HttpEncoding = "base64" | "binary";

/** nnserve in a server process of its own, called over HTTP with one encoding. */
function nnserveHttp(name: string, encoding: HttpEncoding): Engine {
  return {
    name,
    async prepare(model, input, threads) {
      const server = await spawnServer({
        NNSERVE_THREADS: String(threads),
        NNSERVE_WORKERS: "1",
      });
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
      const imported = await post(
        `/v1/models?name=peer&shape=${encodeURIComponent(shape)}`,
        model as Uint8Array<ArrayBuffer>,
        "application/onnx",
      );
      const compilation = await post(
        "/v1/compilations",
        // The CPU devices, as the in-process run: this machine's software GPU (llvmpipe) is
        // slower, and calibration noise must not move steps onto it between runs.
        JSON.stringify({
          model: imported.id,
          preference: "FAST_SINGLE_ANSWER",
          devices: ["cpu-simd", "cpu-reference"],
        }),
      );
      const executions = `/v1/compilations/${compilation.id}/executions`;
      let driverMs = 0;
      const run = encoding === "base64"
        ? (() => {
          const body = JSON.stringify({
            inputs: [{ base64: new Uint8Array(input.data.buffer).toBase64() }],
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
          const headers = {
            "content-type": "application/octet-stream",
            accept: "application/octet-stream",
          };
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
  };
}

export const NNSERVE_HTTP_BASE64 = nnserveHttp("nnserve HTTP (JSON, base64)", "base64");
export const NNSERVE_HTTP_BINARY = nnserveHttp("nnserve HTTP (binary)", "binary");
