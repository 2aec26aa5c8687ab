// A/B of tiny-model REST under wrk: server from /tmp/w/base (A) and from this tree (B), alternating rounds
import { TINY_ADD_MODEL } from "./bench/rest_overhead.ts";
import { postJson, spawnServer } from "./bench/server_process.ts";
import { spawnServer as spawnBase } from "/tmp/w/base/bench/server_process.ts";
const wrk = async (url: string, s: number) => {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, `wrk.method = "POST"\nwrk.body = '{"inputs":[{"data":[1,2,3,4]},{"data":[5,6,7,8]}]}'\nwrk.headers["Content-Type"] = "application/json"\n`);
  const { stdout } = await new Deno.Command("wrk", { args: ["-t1", "-c64", `-d${s}s`, "-s", script, url], stdout: "piped" }).output();
  const text = new TextDecoder().decode(stdout);
  if (/Non-2xx|Socket errors/.test(text)) throw new Error(text);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(text)?.[1]);
};
const urls: Record<string, string> = {};
const servers = [];
for (const [name, spawn] of [["A", spawnBase], ["B", spawnServer]] as const) {
  const server = await spawn();
  servers.push(server);
  const model = await postJson(server.url, "/v1/models", TINY_ADD_MODEL);
  const c = await postJson(server.url, "/v1/compilations", { model: model.id });
  urls[name] = `${server.url}/v1/compilations/${c.id}/executions`;
  await wrk(urls[name], 1);
}
const res: Record<string, number[]> = { A: [], B: [] };
for (let r = 0; r < Number(Deno.env.get("ROUNDS") ?? 4); r++) for (const name of Object.keys(urls)) res[name].push(await wrk(urls[name], 3));
const med = (v: number[]) => [...v].sort((a, b) => a - b)[v.length >> 1];
console.log(Object.entries(res).map(([k, v]) => `${k} ${v.map((x) => (x / 1000).toFixed(1)).join(" ")} (med ${(med(v) / 1000).toFixed(1)}k)`).join(" | "), "| B/A by round", res.B.map((b, i) => (b / res.A[i]).toFixed(2)).join(" "));
for (const s of servers) await s.stop();
