/** The peers benchmark's results as Markdown tables and an SVG bar chart. */
import type { Latency } from "./timing.ts";
import { restSummary, type RestThroughput } from "./rest.ts";
import { FINDINGS, ISSUE_31_ACROSS_RUNS, REST_PROFILE, SPEED_TARGETS } from "./findings.ts";

export interface Results {
  machine: string;
  latency: {
    model: string;
    engine: string;
    threads: number;
    latency: Latency;
    maxError: number;
    httpOverheadMs?: number;
  }[];
  gemm: { n: number; threads: number; gflops: number }[];
  peak?: { gflops: number; relaxed: boolean };
  rest?: RestThroughput;
  /**
   * Per model: its input's bytes POSTed to a bare Hono server answering with its output's
   * bytes, HTTP's own floor for that model here.
   */
  floors: { model: string; inBytes: number; outBytes: number; latency: Latency }[];
  /** Engines that could not take a model, and why (no latency row for them). */
  notBuilt: { model: string; engine: string; reason: string }[];
  /** What loaded the throughput runs: wrk, or fetch loops where wrk is not installed. */
  throughputClient?: "wrk" | "fetch";
  /**
   * Per model and raw-body HTTP server (each with its defaults): requests/s under
   * `connections` concurrent clients, or why it was not measured.
   */
  throughput: {
    model: string;
    engine: string;
    connections: number;
    requests?: number;
    requestsPerSecond?: number;
    notMeasured?: string;
  }[];
}

const PEER = "onnxruntime-node";
const HTTP_PEER = "onnxruntime-node HTTP server";
const WASM_PEER = "onnxruntime-web (wasm)";
const TFJS_PEER = "tfjs-backend-wasm";
const NNSERVE_IN_PROCESS = "nnserve in process";
const NNSERVE_BINARY = "nnserve HTTP (binary)";
const NNSERVE_BINARY_OPEN = "nnserve HTTP (binary, extents at execution)";

/** The text of a docs file another run writes, or undefined before it exists. */
function docsFile(name: string): string | undefined {
  try {
    return Deno.readTextFileSync(new URL(`../../docs/${name}`, import.meta.url));
  } catch {
    return undefined;
  }
}

/**
 * The Open Inference Protocol's forms (gRPC, HTTP, bursts), from the table `deno task
 * bench:grpc --write` leaves in docs/grpc-performance.md (its own run: it needs a server with
 * a gRPC port).
 */
function grpcSection(): string {
  const text = docsFile("grpc-performance.md");
  const table = text
    ? text.slice(text.indexOf("| model"))
    : "Not measured yet: run `deno task bench:grpc --write`.";
  return `## The Open Inference Protocol: gRPC, HTTP and bursts\n\nFrom \`deno task bench:grpc\` ` +
    `(docs/grpc-performance.md: one server process, the client in another):\n\n${table.trim()}`;
}

/**
 * The 16-core GPU machine's rows (docs/many-cores.md, from `bench/device.sh` there: that
 * machine is lent to some sessions only), its headings one level down.
 */
function manyCoresSection(): string {
  const text = docsFile("many-cores.md");
  if (!text) return "## Many cores\n\nNot measured yet: run `bench/device.sh` on the GPU machine.";
  return text.trim().replace(/^(#+) /gm, "#$1 ");
}

/** A ratio's verdict against its bound: "1.02x" and whether it holds. */
function within(ratio: number, bound: number, atLeast = false) {
  // Three decimals where two would round onto the bound and hide which side it is on.
  const digits = Math.abs(ratio - bound) < 0.005 ? 3 : 2;
  return { text: `${ratio.toFixed(digits)}x`, met: atLeast ? ratio >= bound : ratio <= bound };
}

/** The cells of the markdown table rows in `text` whose first cells are `lead`. */
function tableRows(text: string | undefined, ...lead: string[]): string[][] {
  return (text ?? "").split("\n")
    .filter((line) => line.startsWith("| "))
    .map((line) => line.slice(2, -2).split(" | "))
    .filter((cells) => lead.every((cell, k) => cells[k] === cell));
}

/**
 * #33's targets (throughput): REST from the run above; bursts and batching from the files
 * their own benchmarks write (docs/grpc-performance.md, docs/load.md), with the floors and
 * ceilings measured there.
 */
function issue33Targets(results: Results): string {
  const rest = results.rest;
  const restLine = rest
    ? `- REST at least 0.33x of the Hono echo: ${rest.ratio >= 0.33 ? "met" : "missed"} ` +
      `(${rest.ratio.toFixed(2)}x, the median of ${rest.ratios.length} rounds: ` +
      `${rest.ratios.map((r) => r.toFixed(2)).join(", ")}).`
    : "- REST at least 0.33x of the Hono echo: not measured in the run above.";
  const grpc = docsFile("grpc-performance.md");
  const roundTrip = (form: string) =>
    Number(tableRows(grpc, "ADD of two float32[2]", form)[0]?.[2] ?? NaN);
  const burst = roundTrip("burst");
  const burstLine = Number.isNaN(burst)
    ? "- Bursts under 100 µs a round trip: not measured yet (`deno task bench:grpc --write`)."
    : `- Bursts under 100 µs a round trip: ${burst < 100 ? "met" : "missed"} (${burst} µs for ` +
      `the tiny model with the service's default polling window of 200 µs, ` +
      `docs/grpc-performance.md; the floors in the same run, servers that sleep between ` +
      `frames: a bare WebSocket echo ${roundTrip("bare WebSocket echo of the input's bytes")} ` +
      `µs, a bare TCP echo ${roundTrip("bare TCP echo of the input's bytes (no WebSocket)")} ` +
      `µs; the burst on a server with the window off ${
        roundTrip("burst, polling window off (NNSERVE_BURST_POLLING_WINDOW=0)")
      } µs: docs/burst-protocol.md).`;
  const load = docsFile("load.md");
  const models = ["MobileNetV2 1.0 224x224", "PP-OCR text direction 48x192"];
  const onOff = models.flatMap((model) =>
    tableRows(load, model)
      .filter((cells) => cells[2] === "16" && cells[1].startsWith("nnserve, batching on"))
      .map((cells) => ({
        model: model.split(" ")[0],
        delay: /maxQueueDelayUs (\d+)/.exec(cells[1])?.[1] ?? "?",
        ratio: cells[7],
      }))
  );
  const perImage = models.flatMap((model) =>
    tableRows(load, model, "nnserve in process").map((cells) =>
      `${model.split(" ")[0]} ${cells[6]}`
    )
  );
  // The CPU table's rows (model, server, requests/s, CPU ms, serving thread ms): five cells.
  const servingShare = models.flatMap((model) =>
    tableRows(load, model, "nnserve, batching off")
      .filter((cells) => cells.length === 5)
      .map((cells) => `${model.split(" ")[0]} ${cells[4]} of ${cells[3]} ms`)
  );
  const batchingLine = onOff.length === 0
    ? "- Batching at least 1.5x at 16 clients: not measured yet (`deno task bench:load --write`)."
    : `- Batching on at least 1.5x off at 16 clients: ${
      onOff.some((r) => parseFloat(r.ratio) >= 1.5) ? "met for some rows" : "missed"
    } (${
      onOff.map((r) => `${r.model} ${r.ratio} with a queue delay of ${r.delay} µs`).join(", ")
    }; docs/load.md). With every ` +
      `core busy a batch saves at most what an image costs less in a larger run: in process, a ` +
      `batch of 8 costs ${perImage.join(", ")} of a batch of 1 per image there.` +
      (servingShare.length === 0 ? "" : ` Of the CPU a request took with batching off, the ` +
        `serving thread's part, which no batch shares: ${servingShare.join(", ")}.`);
  const manyCores = docsFile("many-cores.md") !== undefined;
  return `## Targets of the throughput issue

${restLine}
${burstLine}
${batchingLine}
- Throughput on the 16-core GPU machine at 1 and 16 clients: ${
    manyCores ? "in docs/many-cores.md (the section above)" : "not measured yet"
  }.`;
}

/**
 * One of #31's targets in the run above: per model (and thread count), nnserve's ratio to
 * its peer, and which rows missed.
 */
function targetLine(
  name: string,
  rows: { label: string; ratio: { text: string; met: boolean } }[],
): string {
  if (rows.length === 0) return `- ${name}: not measured in the run above.`;
  const missed = rows.filter((r) => !r.ratio.met);
  const list = (of: typeof rows) => of.map((r) => `${r.label} ${r.ratio.text}`).join(", ");
  if (missed.length === 0) return `- ${name}: met for every row (${list(rows)}).`;
  if (missed.length === rows.length) return `- ${name}: missed for every row (${list(rows)}).`;
  return `- ${name}: missed for ${missed.length} of ${rows.length} rows (${list(missed)}); ` +
    `met for ${list(rows.filter((r) => r.ratio.met))}.`;
}

/** The latency row of `engine` on `model` at `threads`. */
function latencyRow(results: Results, model: string, engine: string, threads: number) {
  return results.latency.find((r) =>
    r.model === model && r.engine === engine && r.threads === threads
  );
}

/** The throughput row of `engine` on `model`. */
function throughputRow(results: Results, model: string, engine: string) {
  return results.throughput.find((t) => t.model === model && t.engine === engine);
}

/** #31's targets as the run above measured them, then what earlier runs and profiles add. */
function issue31Targets(results: Results): string {
  const median = (model: string, engine: string, threads: number) =>
    latencyRow(results, model, engine, threads)?.latency.median;
  const models = [...new Set(results.latency.map((r) => r.model))];
  const threadCounts = [...new Set(results.latency.map((r) => r.threads))];
  const short = (model: string) => model.split(/ \d|,/)[0];
  const ratios = (engine: string, peer: string, bound: number) =>
    models.flatMap((model) =>
      threadCounts.flatMap((threads) => {
        const ours = median(model, engine, threads);
        const theirs = median(model, peer, threads);
        return ours === undefined || theirs === undefined ? [] : [{
          label: `${short(model)} ${threads}T`,
          ratio: within(ours / theirs, bound),
        }];
      })
    );
  const rate = (model: string, engine: string) =>
    throughputRow(results, model, engine)?.requestsPerSecond;
  const throughputRows = (engine: string) =>
    models.flatMap((model) => {
      const ours = rate(model, engine);
      const theirs = rate(model, HTTP_PEER);
      return ours === undefined || theirs === undefined
        ? []
        : [{ label: short(model), ratio: within(ours / theirs, 1, true) }];
    });
  const verdicts = [
    targetLine(
      "In process within 1.1x of onnxruntime-node at equal threads",
      ratios(NNSERVE_IN_PROCESS, PEER, 1.1),
    ),
    targetLine(
      "Over HTTP with raw bodies within 1.3x of the onnxruntime-node server",
      ratios(NNSERVE_BINARY, HTTP_PEER, 1.3),
    ),
    targetLine(
      "The same with the extents taken at execution (the models as published)",
      ratios(NNSERVE_BINARY_OPEN, HTTP_PEER, 1.3),
    ),
    targetLine(
      `Throughput at ${results.throughput[0]?.connections ?? 16} connections at least the ` +
        "onnxruntime-node server's",
      throughputRows(NNSERVE_BINARY),
    ),
    targetLine(
      "The same with the extents taken at execution",
      throughputRows(NNSERVE_BINARY_OPEN),
    ),
  ];
  return `## Targets of #31 (the onnxruntime device)

In the run above (T: threads):

${verdicts.join("\n")}

${ISSUE_31_ACROSS_RUNS.trimEnd()}`;
}

/** The latency table with each nnserve row's ratio to the peer at equal threads. */
function latencyTable(results: Results): string {
  const rows = results.latency.map((r) => {
    const ratioTo = (engine: string) => {
      const peer = latencyRow(results, r.model, engine, r.threads);
      return peer && r.engine.startsWith("nnserve")
        ? `${(r.latency.median / peer.latency.median).toFixed(2)}x`
        : "";
    };
    const httpRatio = r.engine.startsWith("nnserve HTTP") ? ratioTo(HTTP_PEER) : "";
    const http = r.httpOverheadMs === undefined ? "" : r.httpOverheadMs.toFixed(2);
    const floor = r.httpOverheadMs === undefined
      ? ""
      : results.floors.find((f) => f.model === r.model)?.latency.median.toFixed(2) ?? "";
    return `| ${r.model} | ${r.engine} | ${r.threads} | ${r.latency.median.toFixed(2)} | ` +
      `${r.latency.p90.toFixed(2)} | ${ratioTo(PEER)} | ${httpRatio} | ${ratioTo(WASM_PEER)} | ` +
      `${ratioTo(TFJS_PEER)} | ${http} | ${floor} | ${r.maxError.toExponential(1)} |`;
  });
  return [
    "| model | engine | threads | median ms | p90 ms | / onnxruntime-node | " +
    "/ onnxruntime-node HTTP server | / onnxruntime-web | / tfjs-backend-wasm | HTTP ms | " +
    "HTTP floor ms | max abs error |",
    "| --- | --- | --: | --: | --: | --: | --: | --: | --: | --: | --: | --: |",
    ...rows,
  ].join("\n");
}

/** Requests/s per model and server, with nnserve's ratio to the onnxruntime-node server. */
function throughputTable(results: Results): string {
  const rows = results.throughput.map((t) => {
    if (t.requestsPerSecond === undefined) {
      return `| ${t.model} | ${t.engine} | ${t.connections} | not measured: ` +
        `${t.notMeasured?.replaceAll("|", "\\|")} | |`;
    }
    const peer = throughputRow(results, t.model, HTTP_PEER);
    const ratio = peer?.requestsPerSecond && t.engine.startsWith("nnserve")
      ? `${(t.requestsPerSecond / peer.requestsPerSecond).toFixed(2)}x`
      : "";
    return `| ${t.model} | ${t.engine} | ${t.connections} | ${t.requestsPerSecond.toFixed(1)} | ` +
      `${ratio} |`;
  });
  return [
    "| model | server | connections | requests/s | / onnxruntime-node HTTP server |",
    "| --- | --- | --: | --: | --: |",
    ...rows,
  ].join("\n");
}

function gemmTable(results: Results): string {
  const peak = results.peak?.gflops ?? NaN;
  return [
    "| GEMM | threads | GFLOP/s | of one core's SIMD128 peak |",
    "| --- | --: | --: | --: |",
    ...results.gemm.map((g) =>
      `| ${g.n}^3 | ${g.threads} | ${g.gflops.toFixed(1)} | ${
        (100 * g.gflops / peak).toFixed(0)
      }% |`
    ),
  ].join("\n");
}

export function performanceMarkdown(results: Results): string {
  const rest = results.rest;
  return `# Performance

Written by \`deno task bench:peers --write\` on ${new Date().toISOString().slice(0, 10)}
(${results.machine}). Every number below comes from that one run; rerun it to check them.

![latency chart](performance.svg)

## Latency (same ONNX bytes, same seeded input in every engine)

For each model and thread count every engine is prepared first and warmed up for at least a
second; then they take turns, five rounds in which each runs a fifth of its runs (the first run
of a turn not counted), so that a slow spell of the virtual machine's host (it moves a
two-thread run by up to 1.4x for tens of seconds) falls on all of them alike.

${latencyTable(results)}
${
    results.notBuilt.length
      ? `\nNot run:\n\n${
        results.notBuilt.map((n) => `- ${n.engine} on ${n.model} (${n.reason})`).join("\n")
      }\n`
      : ""
  }
nnserve over HTTP imports the ONNX file with its input's extents fixed (\`?shape=\`), or, in
the rows "extents at execution", as the file has them (MobileNetV2 exported with a symbolic
batch, the PaddleOCR files as published) with the extents sent in each request's
\`Input-Dimensions\` header; its server runs one executor with the row's threads.
"onnxruntime-node HTTP server" is the server a user would write instead
(\`bench/peers/ort_http_server.ts\`): one \`InferenceSession\` (default options but
\`intraOpNumThreads\`, set to the row's threads) behind \`node:http\` in a Deno process of its
own, taking the same raw body and \`Input-Dimensions\` and answering the first output's raw
bytes; "/ onnxruntime-node HTTP server" is an nnserve HTTP row's ratio to it.

"HTTP ms" is the request's latency minus the driver's own time (\`timing.inDriverUs\`): the
cost of the REST round trip, with the tensor as base64 JSON or as raw bytes (an
\`application/octet-stream\` body answered with the output's bytes). "HTTP floor ms" is what
HTTP alone costs for the same bytes here: the model's input POSTed to a bare Hono server in a
process of its own, answered with as many bytes as the model's output, with the same client.${
    results.floors.length
      ? `\n\n${
        results.floors.map((f) => `- ${f.model}: ${f.inBytes} bytes up, ${f.outBytes} down`).join(
          "\n",
        )
      }`
      : ""
  }

## Throughput at ${results.throughput[0]?.connections ?? 16} connections

${throughputTable(results)}

Requests per second with that many clients at once (${
    results.throughputClient === "fetch"
      ? "client loops of fetch in the benchmark's process: wrk is not installed"
      : "wrk's connections, one client thread in C"
  }; keep-alive, each client sends its next request when its answer came), raw float32 bodies
with \`Input-Dimensions\` where the server takes the extents at execution. The servers of a model
run at once and are loaded in turn: a warm-up each, then three rounds of 2 s each, pooled per
server, so that a slow spell of the machine falls on every server alike (one 3 s window each
had the onnxruntime-node server's own rate move between 258 and 370 requests/s). Each server runs with its defaults, as a user starts it: nnserve's executors and
kernel threads (\`NNSERVE_WORKERS\`, \`NNSERVE_THREADS\`: this machine's cores), the
onnxruntime-node server's one session with onnxruntime's default threads, runs overlapping.
Until 2026-11-29 the clients were fetch loops in the benchmark's process, which spent CPU of the
same cores, and took more from the onnxruntime-node server (its threads spin between its runs'
parts) than from nnserve: MobileNetV2 measured 1.13x that server then (1.18x with the extents at
execution), and 1.00x (1.02x) in the first run under wrk.

## GEMM

WebAssembly SIMD128 peak of one core, measured in the same run: ${
    results.peak?.gflops.toFixed(1)
  } GFLOP/s (${results.peak?.relaxed ? "relaxed-SIMD FMA" : "mul + add"}).

${gemmTable(results)}

## REST throughput (tiny model, ADD of two float32[4], wrk, 64 connections)

${rest ? `${restSummary(rest)}.` : "Not measured: wrk is not installed (`apt install wrk`)."}

${REST_PROFILE}

${grpcSection()}

${manyCoresSection()}

${FINDINGS.trimEnd()}

${issue31Targets(results)}

${issue33Targets(results)}

${
    SPEED_TARGETS.replace(
      "${REST_RATIO}",
      rest
        ? `${rest.ratio >= 0.5 ? "met" : "missed"} (${rest.ratio.toFixed(2)}x in the run above)`
        : "not measured in the run above",
    )
  }`;
}

/** Bars of median latency per engine and thread count, for the first model (MobileNetV2). */
export function barChartSvg(results: Results): string {
  const bars = results.latency.filter((b) => b.model === results.latency[0]?.model);
  const width = 760, barHeight = 18, gap = 6, left = 330;
  const max = Math.max(...bars.map((b) => b.latency.median));
  const height = bars.length * (barHeight + gap) + 40;
  const scale = (width - left - 80) / max;
  const rows = bars.map((b, i) => {
    const y = 30 + i * (barHeight + gap);
    const w = Math.max(1, b.latency.median * scale);
    const color = b.engine.startsWith("nnserve") ? "#3b7dd8" : "#999999";
    return `<text x="${left - 8}" y="${y + 13}" text-anchor="end">${
      escapeXml(`${b.engine}, ${b.threads} thread${b.threads > 1 ? "s" : ""}`)
    }</text><rect x="${left}" y="${y}" width="${
      w.toFixed(1)
    }" height="${barHeight}" fill="${color}"/>` +
      `<text x="${(left + w + 6).toFixed(1)}" y="${y + 13}">${
        b.latency.median.toFixed(1)
      } ms</text>`;
  });
  const title = escapeXml(`${bars[0]?.model ?? ""}: median latency (lower is better)`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" ` +
    `font-family="sans-serif" font-size="12"><text x="10" y="18" font-weight="bold">${title}</text>` +
    rows.join("") + "</svg>\n";
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
