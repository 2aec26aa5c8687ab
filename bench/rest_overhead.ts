/**
 * REST execution overhead: requests per second of a tiny execution (ADD of two float32[4])
 * through the full stack, against a Hono JSON echo of the same body on the same machine.
 */
import { Hono } from "hono";
import { startServer } from "../server.ts";
import { postJson } from "./server_process.ts";

async function rate(
  url: string,
  body: string,
  options: { concurrency: number; seconds: number },
): Promise<number> {
  let done = 0;
  const end = performance.now() + options.seconds * 1000;
  const loop = async () => {
    while (performance.now() < end) {
      const r = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
      await r.arrayBuffer();
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      done++;
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: options.concurrency }, loop));
  return done / ((performance.now() - started) / 1000);
}

/** The tiny model of REST throughput benchmarks: ADD of two float32[4]. */
export const TINY_ADD_MODEL = (() => {
  const t = { type: "TENSOR_FLOAT32", dimensions: [4], scale: 0, zeroPoint: 0 };
  return {
    operands: [
      { ...t, lifetime: "MODEL_INPUT" },
      { ...t, lifetime: "MODEL_INPUT" },
      { type: "INT32", dimensions: [], lifetime: "CONSTANT_COPY", value: [0] },
      { ...t, lifetime: "MODEL_OUTPUT" },
    ],
    operations: [{ type: "ADD", inputs: [0, 1, 2], outputs: [3] }],
    inputIndexes: [0, 1],
    outputIndexes: [3],
  };
})();

/** Prints executions/s, echo requests/s and their ratio. */
export async function restOverhead(): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-bench-" });
  const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
  const echo = new Hono().post("/echo", async (c) => c.json(await c.req.json()));
  const echoServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, echo.fetch);
  try {
    const post = (path: string, body: unknown) => postJson(server.url, path, body);
    const { id: modelId } = await post("/v1/models", TINY_ADD_MODEL);
    const { id } = await post("/v1/compilations", { model: modelId });
    const body = JSON.stringify({ inputs: [{ data: [1, 2, 3, 4] }, { data: [5, 6, 7, 8] }] });
    const options = { concurrency: 8, seconds: 3 };
    await rate(`${server.url}/v1/compilations/${id}/executions`, body, { ...options, seconds: 1 });
    const executions = await rate(`${server.url}/v1/compilations/${id}/executions`, body, options);
    const echoUrl = `http://127.0.0.1:${echoServer.addr.port}/echo`;
    const echoes = await rate(echoUrl, body, options);
    console.log(`executions/s (ADD float32[4], REST): ${executions.toFixed(0)}`);
    console.log(`hono JSON echo req/s (same client):  ${echoes.toFixed(0)}`);
    console.log(`ratio execution/echo: ${(executions / echoes).toFixed(3)}`);
  } finally {
    await echoServer.shutdown();
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
