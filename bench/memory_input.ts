/**
 * Input by memory reference: the time of one execution whose 4 MB input (float32, 1M
 * elements) is sent inline as base64, against the same execution with the input read from a
 * memory uploaded once (`{"memory", "offset", "length"}`), in the same run.
 *
 * The model is a global AVERAGE_POOL_2D ([1, 1024, 1024, 1] → [1, 1, 1, 1]), so the
 * response is one float in both modes and the difference is the input's path. Both request
 * bodies are serialized once before timing; each mode runs sequentially, alternating with
 * the other, and the median is reported.
 */
import { startServer } from "../server.ts";
import { float32Tensor as tensor, int32Scalar as int32 } from "../tools/model_json.ts";
import { median } from "./peers/timing.ts";

const SIDE = 1024;
const ELEMENTS = SIDE * SIDE;
const WARMUP = 3;
const RUNS = 25;

/** The global average pool of a [1, SIDE, SIDE, 1] float32 input (implicit VALID padding). */
function poolModel() {
  return {
    operands: [
      tensor([1, SIDE, SIDE, 1], "MODEL_INPUT"),
      int32(2), // padding VALID
      int32(1), // stride width
      int32(1), // stride height
      int32(SIDE), // filter width
      int32(SIDE), // filter height
      int32(0), // activation NONE
      tensor([1, 1, 1, 1], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "AVERAGE_POOL_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  };
}

async function request(url: string, init: RequestInit): Promise<unknown> {
  const response = await fetch(url, init);
  const text = await response.text();
  if (!response.ok) throw new Error(`${init.method} ${url}: HTTP ${response.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: typeof body === "string" ? body : JSON.stringify(body),
});

/** Prints the median time per execution of each mode and their ratio. */
export async function memoryInput(): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-bench-" });
  const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
  try {
    const input = Float32Array.from({ length: ELEMENTS }, (_, i) => (i % 1000) / 1000);
    const bytes = new Uint8Array(input.buffer);
    const expected = input.reduce((sum, x) => sum + x, 0) / ELEMENTS;

    const model = await request(`${server.url}/v1/models`, json(poolModel())) as { id: string };
    const compilation = await request(
      `${server.url}/v1/compilations`,
      json({ model: model.id }),
    ) as { id: string };
    const memory = await request(`${server.url}/v1/memories`, {
      method: "POST",
      headers: { "content-type": "application/octet-stream" },
      body: bytes,
    }) as { id: string; size: number };

    const executions = `${server.url}/v1/compilations/${compilation.id}/executions`;
    const inlineBody = JSON.stringify({ inputs: [{ base64: bytes.toBase64() }] });
    const memoryBody = JSON.stringify({
      inputs: [{ memory: memory.id, offset: 0, length: bytes.byteLength }],
    });
    const run = async (body: string): Promise<number> => {
      const started = performance.now();
      const result = await request(executions, json(body)) as { outputs: { data: number[] }[] };
      const ms = performance.now() - started;
      const value = result.outputs[0].data[0];
      if (Math.abs(value - expected) > 1e-3) {
        throw new Error(`the pool computed ${value}, expected ${expected}`);
      }
      return ms;
    };

    for (let i = 0; i < WARMUP; i++) {
      await run(inlineBody);
      await run(memoryBody);
    }
    const inline: number[] = [];
    const byMemory: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      inline.push(await run(inlineBody));
      byMemory.push(await run(memoryBody));
    }
    const inlineMs = median(inline);
    const memoryMs = median(byMemory);
    const mb = (bytes.byteLength / 2 ** 20).toFixed(0);
    console.log(
      `model: AVERAGE_POOL_2D over float32 [1,${SIDE},${SIDE},1] (${mb} MB input), ` +
        `one-float output returned inline in both modes; median of ${RUNS} runs each`,
    );
    console.log(
      `input inline (base64, ${(inlineBody.length / 2 ** 20).toFixed(1)} MB JSON body): ` +
        `${inlineMs.toFixed(2)} ms/execution`,
    );
    console.log(
      `input by memory reference (uploaded once, ${memoryBody.length} B JSON body): ` +
        `${memoryMs.toFixed(2)} ms/execution`,
    );
    console.log(`ratio inline/memory: ${(inlineMs / memoryMs).toFixed(2)}`);
    await request(`${server.url}/v1/memories/${memory.id}`, { method: "DELETE" });
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
