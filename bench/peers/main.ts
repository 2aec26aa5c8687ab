/**
 * `deno task bench:peers [--quick] [--write] [--models TEXT]`: in one run on this machine,
 * the same models (MobileNetV2, PaddleOCR's three CNNs, Moonshine's encoder) in nnserve (in process, and over HTTP as JSON with
 * base64 tensors or raw bytes, imported with its extents fixed by `?shape=` or left as the
 * file has them and sent with each execution), onnxruntime-node (in process, and behind the
 * `node:http` server a user would write around it), onnxruntime-web and (where it can be
 * built, at the threads it has) TensorFlow.js's WebAssembly backend at 1 and 2 threads,
 * median and p90 latency and nnserve's ratio to the peers; requests/s of the raw-body HTTP
 * servers (nnserve with its default executors, the onnxruntime-node server with its default
 * session) under 16 concurrent connections; GEMM GFLOP/s against this CPU's measured
 * WebAssembly SIMD128 peak; REST throughput of a tiny model against a Hono JSON echo. With
 * `--write` it writes the tables and a chart to docs/performance.md and performance.svg;
 * `--models` runs only the models whose names contain TEXT, and only their rows (a partial
 * run: not with `--write`).
 */
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import {
  MOONSHINE_ENCODER,
  OCR_CLASSIFIER,
  OCR_DETECTOR,
  OCR_RECOGNIZER,
} from "../published_models.ts";
import { MOBILENET_V2_INPUT, mobilenetV2Onnx } from "../mobilenet_v2_onnx.ts";
import { seededFloats } from "../../kernels/seeded_random.ts";
import {
  type Engine,
  NNSERVE_HTTP_BASE64,
  NNSERVE_HTTP_BINARY,
  NNSERVE_HTTP_BINARY_OPEN,
  NNSERVE_IN_PROCESS,
  NNSERVE_OWN_KERNELS,
  NotBuildable,
  ONNXRUNTIME_NODE,
  ONNXRUNTIME_NODE_HTTP,
  ONNXRUNTIME_WEB,
  type PeerInput,
  type PeerRun,
  type RawEndpoint,
} from "./engines.ts";
import { gemmGflops } from "./gemm.ts";
import { restSummary, restThroughput, uploadFloor } from "./rest.ts";
import { TFJS_WASM } from "./tfjs_wasm.ts";
import { simd128PeakGflops } from "./simd_peak.ts";
import { loadClient, type ThroughputBudget, throughputs } from "./throughput.ts";
import { measureInTurns } from "./timing.ts";
import { barChartSvg, performanceMarkdown, type Results } from "./report.ts";

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean" },
    write: { type: "boolean" },
    models: { type: "string" },
  },
});
if (flags.write && flags.models !== undefined) {
  throw new Error("--write writes every model's rows: run it without --models");
}
const budget = flags.quick
  ? { warmup: 2, runs: 10, budgetMs: 2000, rounds: 2 }
  : { warmup: 5, warmupMs: 1000, runs: 50, budgetMs: 10000, rounds: 5 };
const loadBudget: ThroughputBudget = flags.quick
  ? { connections: 16, warmupSeconds: 0.5, seconds: 0.5, rounds: 2 }
  : { connections: 16, warmupSeconds: 1, seconds: 2, rounds: 3 };

const THREADS = [1, 2];
/** Run last to first: onnxruntime-node first (every other engine's reference output). */
const ENGINES: Engine[] = [
  NNSERVE_HTTP_BASE64,
  NNSERVE_HTTP_BINARY,
  NNSERVE_HTTP_BINARY_OPEN,
  NNSERVE_IN_PROCESS,
  NNSERVE_OWN_KERNELS,
  TFJS_WASM,
  ONNXRUNTIME_WEB,
  ONNXRUNTIME_NODE_HTTP,
  ONNXRUNTIME_NODE,
];
/** Throughput's servers: the peer first (the ratios' denominator). */
const THROUGHPUT_ENGINES: Engine[] = [
  ONNXRUNTIME_NODE_HTTP,
  NNSERVE_HTTP_BINARY_OPEN,
  NNSERVE_HTTP_BINARY,
];

/** How long one run may take before its engine's row is given up. */
const RUN_TIMEOUT_MS = 60_000;

/** A run that did not answer in time. */
class RunTimedOut extends Error {}

/**
 * A peer that stops answering (onnxruntime-web's threads have been seen to): its row is left
 * out and said so, and the benchmark goes on.
 */
function timedOut(model: string, engine: string, threads: number, error: RunTimedOut): void {
  console.log(`${model} | ${engine} | ${threads} thread(s) | ${error.message}`);
  results.notBuilt.push({ model, engine, reason: error.message });
}

/** `run` whose runs fail with {@link RunTimedOut} when they take longer than `ms`. */
function answersWithin(run: PeerRun, ms: number): PeerRun {
  return {
    ...run,
    run() {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new RunTimedOut(`a run did not answer within ${ms / 1000} s`)),
          ms,
        );
      });
      return Promise.race([run.run(), late]).finally(() => clearTimeout(timer));
    },
  };
}

/** A float32 image input of `shape`, seeded. */
function imageInput(name: string, shape: number[], seed: number): PeerInput {
  const count = shape.reduce((a, b) => a * b, 1);
  return { name, shape, data: seededFloats(count, seed, 2) };
}

/**
 * A model: its ONNX bytes with fixed extents, and where those differ, `openBytes` with them
 * symbolic as published models have them (engines that take the extents at execution use
 * them). The PaddleOCR files are already symbolic.
 */
interface PeerModel {
  name: string;
  bytes: Uint8Array;
  openBytes?: Uint8Array;
  input: PeerInput;
}

/**
 * MobileNetV2 (seeded weights), the converter issue's published CNNs (PaddleOCR), and a
 * published speech encoder (attention, dynamic quantization).
 */
const allModels: PeerModel[] = [
  {
    name: "MobileNetV2 1.0 224x224",
    bytes: mobilenetV2Onnx(1),
    openBytes: mobilenetV2Onnx(1, "N"),
    input: imageInput(MOBILENET_V2_INPUT.name, [...MOBILENET_V2_INPUT.dims], 7),
  },
  {
    name: "PP-OCR text direction 48x192",
    bytes: Deno.readFileSync(OCR_CLASSIFIER),
    input: imageInput("x", [1, 3, 48, 192], 8),
  },
  {
    name: "PP-OCRv4 detector 320x320",
    bytes: Deno.readFileSync(OCR_DETECTOR),
    input: imageInput("x", [1, 3, 320, 320], 9),
  },
  {
    name: "PP-OCRv4 recognizer 48x320",
    bytes: Deno.readFileSync(OCR_RECOGNIZER),
    input: imageInput("x", [1, 3, 48, 320], 10),
  },
  {
    name: "Moonshine tiny encoder, 1 s of audio",
    bytes: Deno.readFileSync(MOONSHINE_ENCODER),
    input: imageInput("input_values", [1, 16000], 11),
  },
];
const models = allModels.filter((m) =>
  flags.models === undefined || m.name.toLowerCase().includes(flags.models.toLowerCase())
);

const results: Results = {
  latency: [],
  gemm: [],
  floors: [],
  notBuilt: [],
  throughput: [],
  throughputClient: await loadClient(),
  machine: machine(),
};
/** Each model's first output's bytes (what the throughput runs expect back). */
const answerBytes = new Map<string, number>();
for (const model of models) {
  let outputBytes = 0;
  for (const threads of THREADS) {
    // Every engine prepared first, then measured in turns (`measureInTurns`).
    const contenders: { engine: Engine; run: PeerRun; maxError: number; driverMs: number }[] = [];
    try {
      let reference: Float32Array | undefined;
      for (const engine of [...ENGINES].reverse()) {
        if (engine.threadCounts && !engine.threadCounts.includes(threads)) continue;
        let run: PeerRun;
        try {
          const bytes = engine.opensExtents ? model.openBytes ?? model.bytes : model.bytes;
          run = answersWithin(await engine.prepare(bytes, model.input, threads), RUN_TIMEOUT_MS);
        } catch (error) {
          if (!(error instanceof NotBuildable)) throw error;
          console.log(`${model.name} | ${engine.name} | not built for it: ${error.message}`);
          if (!results.notBuilt.some((n) => n.model === model.name && n.engine === engine.name)) {
            results.notBuilt.push({
              model: model.name,
              engine: engine.name,
              reason: error.message,
            });
          }
          continue;
        }
        let output: Float32Array;
        try {
          output = await run.run();
        } catch (error) {
          await run.close();
          if (!(error instanceof RunTimedOut)) throw error;
          timedOut(model.name, engine.name, threads, error);
          continue;
        }
        reference ??= output; // onnxruntime-node runs first
        outputBytes = reference.byteLength;
        let maxError = 0;
        for (let i = 0; i < output.length; i++) {
          maxError = Math.max(maxError, Math.abs(output[i] - reference[i]));
        }
        contenders.push({ engine, run, maxError, driverMs: 0 });
      }
      const latencies = await measureInTurns(
        contenders.map((c) => ({
          async run(measured) {
            await c.run.run();
            if (measured) c.driverMs += c.run.lastDriverMs?.() ?? 0;
          },
        })),
        budget,
      );
      for (const [k, { engine, run, maxError, driverMs }] of contenders.entries()) {
        const latency = latencies[k];
        if (latency instanceof Error) {
          if (!(latency instanceof RunTimedOut)) throw latency;
          timedOut(model.name, engine.name, threads, latency);
          continue;
        }
        const httpOverhead = run.lastDriverMs
          ? latency.median - driverMs / latency.runs
          : undefined;
        results.latency.push({
          model: model.name,
          engine: engine.name,
          threads,
          latency,
          maxError,
          httpOverheadMs: httpOverhead,
        });
        console.log(
          `${model.name} | ${engine.name} | ${threads} thread(s) | median ` +
            `${latency.median.toFixed(2)} ms, p90 ${latency.p90.toFixed(2)} ms | max |error| ` +
            `${maxError.toExponential(1)}` +
            (httpOverhead === undefined ? "" : ` | HTTP ${httpOverhead.toFixed(2)} ms`),
        );
      }
    } finally {
      for (const { run } of contenders) await run.close();
    }
  }
  answerBytes.set(model.name, outputBytes);
  // HTTP's own floor for this model's bytes: the input up, the output down, nothing run.
  const input = model.input.data;
  const floor = await uploadFloor(
    new Uint8Array(input.buffer as ArrayBuffer),
    outputBytes,
    budget,
  );
  results.floors.push({
    model: model.name,
    inBytes: input.byteLength,
    outBytes: outputBytes,
    latency: floor,
  });
  console.log(
    `${model.name} | HTTP floor: ${input.byteLength} bytes up, ${outputBytes} down to a bare ` +
      `Hono server, median ${floor.median.toFixed(2)} ms, p90 ${floor.p90.toFixed(2)} ms`,
  );
}

// Requests/s under concurrent clients, each server with its defaults (what a user gets): the
// servers of a model loaded in turn, round after round (`throughputs`).
for (const model of models) {
  const open: { engine: Engine; endpoint: RawEndpoint }[] = [];
  try {
    for (const engine of THROUGHPUT_ENGINES) {
      const bytes = engine.opensExtents ? model.openBytes ?? model.bytes : model.bytes;
      try {
        open.push({ engine, endpoint: await engine.endpoint!(bytes, model.input) });
      } catch (error) {
        if (!(error instanceof NotBuildable)) throw error;
        console.log(`${model.name} | ${engine.name} | throughput not measured: ${error.message}`);
        results.throughput.push({
          model: model.name,
          engine: engine.name,
          connections: loadBudget.connections,
          notMeasured: error.message,
        });
      }
    }
    const body = new Uint8Array(model.input.data.buffer as ArrayBuffer);
    const rates = await throughputs(
      open.map((o) => o.endpoint),
      body,
      answerBytes.get(model.name)!,
      loadBudget,
    );
    const peerRate = rates[open.findIndex((o) => o.engine === ONNXRUNTIME_NODE_HTTP)]
      ?.requestsPerSecond;
    for (const [k, { engine }] of open.entries()) {
      const rate = rates[k];
      results.throughput.push({
        model: model.name,
        engine: engine.name,
        connections: loadBudget.connections,
        ...rate,
      });
      console.log(
        `${model.name} | ${engine.name} | ${loadBudget.connections} connections | ` +
          `${rate.requestsPerSecond.toFixed(1)} requests/s (${rate.requests} in ` +
          `${loadBudget.rounds} rounds of ${loadBudget.seconds} s: ${
            rate.roundRates.map((r) => r.toFixed(0)).join(", ")
          })` +
          (engine !== ONNXRUNTIME_NODE_HTTP && peerRate
            ? ` | ${(rate.requestsPerSecond / peerRate).toFixed(2)}x the onnxruntime-node server`
            : ""),
      );
    }
  } finally {
    for (const { endpoint } of open) await endpoint.close();
  }
}

// A partial run (--models) ends with its models' rows.
if (flags.models !== undefined) Deno.exit(0);

const peak = simd128PeakGflops();
results.peak = peak;
console.log(`WebAssembly SIMD128 peak, one core: ${peak.gflops.toFixed(1)} GFLOP/s`);
for (const n of [512, 1024]) {
  for (const threads of THREADS) {
    const gflops = await gemmGflops(n, threads);
    results.gemm.push({ n, threads, gflops });
    console.log(
      `GEMM ${n}^3, ${threads} thread(s): ${gflops.toFixed(1)} GFLOP/s ` +
        `(${(100 * gflops / peak.gflops).toFixed(0)}% of one core's peak)`,
    );
  }
}

// Five rounds: a slow spell of this host moved single rounds from 0.35x to 0.18x.
const rest = await restThroughput(flags.quick ? 1 : 3, flags.quick ? 1 : 5);
results.rest = rest;
console.log(
  rest
    ? `REST: ${restSummary(rest)}`
    : "REST: wrk is not installed (apt install wrk); not measured",
);

if (flags.write) {
  const docs = new URL("../../docs/", import.meta.url);
  await Deno.writeTextFile(new URL("performance.svg", docs), barChartSvg(results));
  await Deno.writeTextFile(new URL("performance.md", docs), performanceMarkdown(results));
  console.log(`wrote ${fileURLToPath(new URL("performance.md", docs))}`);
}
Deno.exit(0);

function machine(): string {
  let cpu = "unknown CPU";
  try {
    cpu = /model name\s*:\s*(.+)/.exec(Deno.readTextFileSync("/proc/cpuinfo"))?.[1] ?? cpu;
  } catch { /* not Linux */ }
  return `${cpu}, ${navigator.hardwareConcurrency} cores, Deno ${Deno.version.deno}`;
}
