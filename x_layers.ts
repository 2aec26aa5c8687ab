import { startServer } from "./server.ts";
import { buildApp } from "./routes/app.ts";
import { TINY_ADD_MODEL } from "./bench/rest_overhead.ts";
import { ExecutionRequest } from "./routes/schemas.ts";
const dataDir = await Deno.makeTempDir();
const server = await startServer({ hostname: "127.0.0.1", port: 0, verbose: false, gpu: false, dataDir });
const app = buildApp(server.service, { apiKeys: new Map(), log: { level: "info", sink: () => {} } });
const j = async (path: string, body: unknown) => (await app.fetch(new Request("http://x" + path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) }))).json();
const model = await j("/v1/models", TINY_ADD_MODEL);
const comp = await j("/v1/compilations", { model: model.id });
const url = `http://127.0.0.1/v1/compilations/${comp.id}/executions`;
const BODY = '{"inputs":[{"data":[1,2,3,4]},{"data":[5,6,7,8]}]}';
const info = { remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: 1 }, completed: Promise.resolve() } as unknown as Deno.ServeHandlerInfo<Deno.NetAddr>;
const driver = server.service.driver;
const owner = "anonymous";
const cases: Record<string, () => Promise<unknown>> = {
  request: async () => { const r = new Request(url, { method: "POST", headers: { "content-type": "application/json", "content-length": String(BODY.length) }, body: BODY }); await r.text(); },
  app: async () => { const r = await app.fetch(new Request(url, { method: "POST", headers: { "content-type": "application/json", "content-length": String(BODY.length) }, body: BODY }), info); await r.text(); },
  parse: async () => ExecutionRequest.safeParse(JSON.parse(BODY)),
  execute: () => driver.execute(owner, comp.id, { inputs: [{ value: { kind: "numbers", values: [1, 2, 3, 4] } }, { value: { kind: "numbers", values: [5, 6, 7, 8] } }] }),
};
for (const name of (Deno.env.get("CASES") ?? "request,parse,execute,app").split(",")) {
  const f = cases[name];
  const per: number[] = [];
  for (let round = 0; round < Number(Deno.env.get("ROUNDS") ?? 7); round++) {
    const n = 20000; let done = 0; const t0 = performance.now();
    await Promise.all(Array.from({ length: 16 }, async () => { while (done < n) { done++; await f(); } }));
    per.push((performance.now() - t0) * 1000 / n);
  }
  per.sort((a, b) => a - b);
  console.log(name.padEnd(10), "min", per[0].toFixed(2), "med", per[3].toFixed(2), "us");
}
await server.close();
