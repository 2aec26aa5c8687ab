// REST under wrk: default server vs guard off (header and idle timeouts 0), alternating, plus the echo
import { TINY_ADD_MODEL } from "./bench/rest_overhead.ts";
import { postJson, spawnServer } from "./bench/server_process.ts";
const wrk = async (url: string, s: number) => {
  const script = await Deno.makeTempFile({ suffix: ".lua" });
  await Deno.writeTextFile(script, `wrk.method = "POST"\nwrk.body = '{"inputs":[{"data":[1,2,3,4]},{"data":[5,6,7,8]}]}'\nwrk.headers["Content-Type"] = "application/json"\n`);
  const { stdout } = await new Deno.Command("wrk", { args: ["-t1", "-c64", `-d${s}s`, "-s", script, url], stdout: "piped" }).output();
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(new TextDecoder().decode(stdout))?.[1]);
};
const urls: Record<string, string> = {};
const servers = [];
for (const [name, env] of [["default", {}], ["noguard", { XV: "3" }]] as const) {
  const server = await spawnServer(env);
  servers.push(server);
  const model = await postJson(server.url, "/v1/models", TINY_ADD_MODEL);
  const c = await postJson(server.url, "/v1/compilations", { model: model.id });
  urls[name] = `${server.url}/v1/compilations/${c.id}/executions`;
  await wrk(urls[name], 1);
}
const res: Record<string, number[]> = { default: [], noguard: [] };
for (let r = 0; r < 4; r++) for (const name of Object.keys(urls)) res[name].push(await wrk(urls[name], 3));
console.log(JSON.stringify(res));
for (const s of servers) await s.stop();
