/**
 * Compilation caching: cold preparation (no cache token: load, validate, plan, pack) vs.
 * preparation from the cache (hit) of a MobileNet-sized model, in one run, as a ratio.
 */
import { NnClient } from "../client/mod.ts";
import { startServer } from "../server.ts";
import { buildMobileNet } from "./mobilenet.ts";

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

/** Prints cold and cached preparation times and their ratio. */
export async function compilationCache(): Promise<void> {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-bench-" });
  const server = await startServer({ hostname: "127.0.0.1", port: 0, dataDir, verbose: false });
  try {
    const client = new NnClient({ baseUrl: server.url });
    const { model, weightCount } = buildMobileNet(client);
    const modelId = await model.finish();
    const token = crypto.getRandomValues(new Uint8Array(32));
    const runs = 7;
    const image = new Float32Array(224 * 224 * 3).map((_, i) => (i % 255) / 255);
    const timed = async (options: Parameters<NnClient["compile"]>[1], execute = false) => {
      const started = performance.now();
      const compilation = await client.compile(modelId, options);
      const ms = performance.now() - started;
      if (execute) await compilation.compute([image]);
      const withFirstRun = performance.now() - started;
      await compilation.delete();
      return { ms, withFirstRun, server: compilation.prepareMs, cache: compilation.cache };
    };
    await timed({});
    const cold: number[] = [];
    const coldServer: number[] = [];
    for (let i = 0; i < runs; i++) {
      const run = await timed({});
      cold.push(run.ms);
      coldServer.push(run.server);
    }
    const miss = await timed({ cache: { token } });
    if (miss.cache !== "miss") throw new Error(`expected a miss, got ${miss.cache}`);
    const hits: number[] = [];
    const hitServer: number[] = [];
    for (let i = 0; i < runs; i++) {
      const hit = await timed({ cache: { token } });
      if (hit.cache !== "hit") throw new Error(`expected a hit, got ${hit.cache}`);
      hits.push(hit.ms);
      hitServer.push(hit.server);
    }
    console.log(
      `model: MobileNet-v1-shaped, ${(weightCount / 1e6).toFixed(2)} M float32 weights; ` +
        `compile request round trip, median of ${runs}`,
    );
    console.log(`cold preparation (no token): ${median(cold).toFixed(1)} ms`);
    console.log(
      `first preparation with a token (miss, writes the cache): ${miss.ms.toFixed(1)} ms`,
    );
    console.log(`preparation from cache (hit): ${median(hits).toFixed(1)} ms`);
    console.log(`ratio cold/cache: ${(median(cold) / median(hits)).toFixed(2)} (target >= 10)`);
    console.log(
      `server-side prepareMs: cold ${median(coldServer).toFixed(1)} ms, cache ${
        median(hitServer).toFixed(1)
      } ms, ratio ${(median(coldServer) / median(hitServer)).toFixed(2)}`,
    );
    // After a hit the weights are read from the data cache on first use: show that cost too.
    const coldThenRun: number[] = [];
    const hitThenRun: number[] = [];
    for (let i = 0; i < runs; i++) {
      coldThenRun.push((await timed({}, true)).withFirstRun);
      hitThenRun.push((await timed({ cache: { token } }, true)).withFirstRun);
    }
    console.log(
      `preparation + first execution: cold ${median(coldThenRun).toFixed(1)} ms, from cache ${
        median(hitThenRun).toFixed(1)
      } ms, ratio ${(median(coldThenRun) / median(hitThenRun)).toFixed(2)}`,
    );
  } finally {
    await server.close();
    await Deno.remove(dataDir, { recursive: true });
  }
}
