/**
 * REST throughput of a tiny model (ADD of two float32[4]) against a Hono JSON echo of the
 * same body, both servers as processes of their own and loaded in turn by `wrk` (64
 * connections, one client thread), which must report no errors: nnserve's execution route
 * (`/v1`) and the Open Inference Protocol's JSON inference (`/v2`), in turns with the echo.
 */
import { fileURLToPath } from "node:url";
import { TINY_ADD_MODEL } from "../rest_overhead.ts";
import { postJson, spawnServer } from "../server_process.ts";
import { type Latency, measure, median } from "./timing.ts";
import { runWrk, wrkInstalled } from "./wrk.ts";

const BODY = '{"inputs":[{"data":[1,2,3,4]},{"data":[5,6,7,8]}]}';

/** The same inference as `/v2` JSON. */
const V2_BODY = '{"inputs":[' +
  '{"name":"input0","shape":[4],"datatype":"FP32","data":[1,2,3,4]},' +
  '{"name":"input1","shape":[4],"datatype":"FP32","data":[5,6,7,8]}]}';

/** Requests per second wrk measured at 64 connections (it throws on errors). */
async function wrk(url: string, seconds: number, body = BODY): Promise<number> {
  const headers = { "content-type": "application/json" };
  return (await runWrk({ url, connections: 64, seconds, headers, body })).requestsPerSecond;
}

/** The Hono echo process; `url` is its root, `tcpPort` its bare TCP echo's port. */
export async function spawnEcho(): Promise<
  { url: string; tcpPort: number; stop(): Promise<void> }
> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", fileURLToPath(new URL("./hono_echo.ts", import.meta.url))],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!/listening on/.test(seen)) seen += (await reader.read()).value ?? "";
  return {
    url: /listening on (\S+)/.exec(seen)![1],
    tcpPort: Number(/tcp echo on port (\d+)/.exec(seen)![1]),
    async stop() {
      child.kill("SIGTERM");
      await child.status;
    },
  };
}

/** REST against the echo: medians of alternating rounds, and each round's ratio. */
export interface RestThroughput {
  /** Median executions/s of nnserve's rounds. */
  executions: number;
  /** Median inferences/s of nnserve's `/v2` rounds. */
  inferences: number;
  /** Each round's `/v2` inferences/s over its echo's requests/s. */
  v2Ratios: number[];
  /** The median of `v2Ratios`. */
  v2Ratio: number;
  /** Median requests/s of the echo's rounds. */
  echoes: number;
  /** Each round's executions/s over its echo's requests/s. */
  ratios: number[];
  /** The median of `ratios`. */
  ratio: number;
  /** Seconds of wrk per round and server. */
  seconds: number;
}

/**
 * nnserve's executions/s and the echo's requests/s, loaded in turn for `rounds` rounds of
 * `seconds` each (after a warm-up of each), so that a slow spell of the machine falls on
 * both alike; undefined when wrk is not installed.
 */
export async function restThroughput(
  seconds: number,
  rounds = 3,
): Promise<RestThroughput | undefined> {
  if (!(await wrkInstalled())) return undefined;
  const server = await spawnServer();
  const echo = await spawnEcho();
  try {
    const post = (path: string, body: unknown) => postJson(server.url, path, body);
    const model = await post("/v1/models?name=tiny&version=1", TINY_ADD_MODEL);
    const compilation = await post("/v1/compilations", { model: model.id });
    const url = `${server.url}/v1/compilations/${compilation.id}/executions`;
    const v2Url = `${server.url}/v2/models/tiny/infer`;
    const echoUrl = `${echo.url}/echo`;
    await wrk(url, 1);
    await wrk(v2Url, 1, V2_BODY);
    await wrk(echoUrl, 1);
    const executions: number[] = [];
    const inferences: number[] = [];
    const echoes: number[] = [];
    for (let round = 0; round < rounds; round++) {
      executions.push(await wrk(url, seconds));
      echoes.push(await wrk(echoUrl, seconds));
      inferences.push(await wrk(v2Url, seconds, V2_BODY));
    }
    const ratios = executions.map((n, k) => n / echoes[k]);
    const v2Ratios = inferences.map((n, k) => n / echoes[k]);
    return {
      executions: median(executions),
      inferences: median(inferences),
      echoes: median(echoes),
      ratios,
      ratio: median(ratios),
      v2Ratios,
      v2Ratio: median(v2Ratios),
      seconds,
    };
  } finally {
    await echo.stop();
    await server.stop();
  }
}

/** The measurement in words: the medians, the ratios and each round's. */
export function restSummary(rest: RestThroughput): string {
  const rounds = rest.ratios.length;
  const byRound = (ratios: number[]) => ratios.map((r) => r.toFixed(2)).join(", ");
  return `${rest.executions.toFixed(0)} executions/s against ${rest.echoes.toFixed(0)} ` +
    `requests/s of a Hono JSON echo (medians of ${rounds} alternating round${
      rounds === 1 ? "" : "s"
    } of ${rest.seconds} s each): ${rest.ratio.toFixed(2)}x (by round: ${
      byRound(rest.ratios)
    }); the same inference as \`/v2\` JSON ${rest.inferences.toFixed(0)} inferences/s, ${
      rest.v2Ratio.toFixed(2)
    }x (by round: ${byRound(rest.v2Ratios)})`;
}

/**
 * Latency of POSTing `bytes` as application/octet-stream to a bare Hono server in a process
 * of its own, answered with `answerBytes`: what HTTP alone costs for a model's input and
 * output here, with the same fetch client as the nnserve runs.
 */
export async function uploadFloor(
  bytes: Uint8Array<ArrayBuffer>,
  answerBytes: number,
  budget: { warmup: number; runs: number; budgetMs: number },
): Promise<Latency> {
  const echo = await spawnEcho();
  try {
    return await measure(async () => {
      const response = await fetch(`${echo.url}/upload?answer=${answerBytes}`, {
        method: "POST",
        headers: { "content-type": "application/octet-stream" },
        body: bytes,
      });
      await response.arrayBuffer();
    }, budget);
  } finally {
    await echo.stop();
  }
}
