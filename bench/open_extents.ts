/**
 * `deno task bench:extents`: published models sent a different extent request after
 * request, as users send them (text lines of every width to a recognizer, photos of every
 * size to a detector, utterances of every length to a speech encoder), over HTTP with raw
 * bodies, nnserve (imported without `?shape=`, its defaults) against the HTTP server a user
 * would write around onnxruntime-node (its defaults), one request at a time, the two servers
 * in turns. Per model and server: the median latency of requests bringing an extent the
 * server has not seen, and of requests repeating it right after; nnserve's ratio to the peer.
 *
 * Each server's turn starts after a quiet pause: onnxruntime's threads keep spinning for a
 * while after a run (the peer's do; nnserve's sessions stop them), and a request sent to
 * the other server meanwhile shares the cores with them (measured: 20-45 ms against 15-20
 * for nnserve's first requests after the peer's, none without the peer).
 * Every answer is checked against the peer's: its length, and its values within the model's
 * tolerance of the largest magnitude.
 */
import {
  type Engine,
  NNSERVE_HTTP_BINARY_OPEN,
  ONNXRUNTIME_NODE_HTTP,
  type RawEndpoint,
} from "./peers/engines.ts";
import { MOONSHINE_ENCODER, OCR_DETECTOR, OCR_RECOGNIZER } from "./published_models.ts";
import { seededFloats } from "../kernels/seeded_random.ts";
import { median } from "./peers/timing.ts";

/** How often each extent is repeated after its first request. */
const REPEATS = 3;
/** The pause before each server's turn, longer than onnxruntime's threads spin. */
const QUIET_MS = 100;

interface OpenModel {
  name: string;
  file: string;
  input: string;
  /** The input shapes, each sent first once, then repeated. */
  shapes: number[][];
  /** How far from the peer's an output value may be, relative to its largest magnitude. */
  tolerance: number;
}

const MODELS: OpenModel[] = [
  {
    name: "PP-OCRv4 recognizer, widths 96-640",
    file: OCR_RECOGNIZER,
    input: "x",
    shapes: [320, 200, 240, 160, 480, 96, 128, 288].map((w) => [1, 3, 48, w]),
    tolerance: 1e-3,
  },
  {
    name: "PP-OCRv4 detector, 256-640 on a side",
    file: OCR_DETECTOR,
    input: "x",
    shapes: [[320, 320], [320, 480], [480, 320], [256, 320], [640, 480], [416, 256]]
      .map(([h, w]) => [1, 3, h, w]),
    tolerance: 1e-3,
  },
  {
    name: "Moonshine tiny encoder, 0.5-2 s of audio",
    file: MOONSHINE_ENCODER,
    input: "input_values",
    shapes: [16000, 16320, 24000, 8000, 12345, 32000].map((n) => [1, n]),
    // Dynamically quantized: a float computed in another order before DynamicQuantizeLinear
    // can move its quantization, and with it the output (measured: up to 4% of the largest
    // value, 1% on average, from the reference kernels and the onnxruntime device alike, and
    // identical for other inputs of the same length; onnx_real_models_test.ts bounds it by
    // onnxruntime's own answer to input noise).
    tolerance: 0.1,
  },
];

const SERVERS: Engine[] = [ONNXRUNTIME_NODE_HTTP, NNSERVE_HTTP_BINARY_OPEN];

/** One request: its latency in ms and the first output's values. */
async function request(
  endpoint: RawEndpoint,
  shape: number[],
  body: Uint8Array<ArrayBuffer>,
): Promise<{ ms: number; output: Float32Array }> {
  const started = performance.now();
  const response = await fetch(endpoint.url, {
    method: "POST",
    headers: { ...endpoint.headers, "input-dimensions": shape.join(",") },
    body,
  });
  const bytes = await response.arrayBuffer();
  const ms = performance.now() - started;
  if (!response.ok) {
    throw new Error(`${endpoint.url}: ${response.status} ${new TextDecoder().decode(bytes)}`);
  }
  return { ms, output: new Float32Array(bytes) };
}

/** Throws unless `actual` is `expected` within `tolerance` of its largest magnitude. */
function agree(
  actual: Float32Array,
  expected: Float32Array,
  tolerance: number,
  what: string,
): void {
  if (actual.length !== expected.length) {
    throw new Error(`${what}: ${actual.length} values, the peer ${expected.length}`);
  }
  const scale = expected.reduce((m, v) => Math.max(m, Math.abs(v)), 1e-6);
  expected.forEach((v, i) => {
    if (!(Math.abs(actual[i] - v) <= tolerance * scale)) {
      throw new Error(`${what} [${i}]: ${actual[i]} against the peer's ${v}`);
    }
  });
}

const rows: string[] = [];
for (const model of MODELS) {
  const bytes = Deno.readFileSync(model.file);
  const first = model.shapes[0];
  const input = { name: model.input, shape: first, data: seededFloats(elements(first), 1, 2) };
  const endpoints: RawEndpoint[] = [];
  try {
    for (const server of SERVERS) endpoints.push(await server.endpoint!(bytes, input));
    const fresh: number[][] = SERVERS.map(() => []);
    const seen: number[][] = SERVERS.map(() => []);
    for (const [k, shape] of model.shapes.entries()) {
      const body = new Uint8Array(seededFloats(elements(shape), k + 2, 2).buffer as ArrayBuffer);
      // Both servers meet the extent; the order alternates, so neither always goes first.
      const order = k % 2 ? [1, 0] : [0, 1];
      const outputs: Float32Array[] = [];
      for (const s of order) {
        await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
        const { ms, output } = await request(endpoints[s], shape, body);
        fresh[s].push(ms);
        outputs[s] = output;
        for (let r = 0; r < REPEATS; r++) {
          seen[s].push((await request(endpoints[s], shape, body)).ms);
        }
      }
      agree(outputs[1], outputs[0], model.tolerance, `${model.name} at ${shape.join("x")}`);
    }
    const [peerFresh, peerSeen] = [median(fresh[0]), median(seen[0])];
    for (const [s, server] of SERVERS.entries()) {
      const [newMs, seenMs] = [median(fresh[s]), median(seen[s])];
      const ratios = s === 0
        ? "| | "
        : `| ${(newMs / peerFresh).toFixed(2)}x | ${(seenMs / peerSeen).toFixed(2)}x `;
      const row = `| ${model.name} | ${server.name} | ${newMs.toFixed(1)} | ${
        seenMs.toFixed(1)
      } ${ratios}|`;
      rows.push(row);
      console.log(row);
    }
  } finally {
    for (const endpoint of endpoints) await endpoint.close();
  }
}

console.log(
  `\n| model | server | a new extent: median ms | an extent seen before: median ms | ` +
    `new: to the peer | seen: to the peer |\n| --- | --- | --: | --: | --: | --: |\n` +
    rows.join("\n"),
);

function elements(shape: number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
