/**
 * The SDK runs unchanged on Node (this machine's Node 20, which lacks
 * `Uint8Array.prototype.toBase64` and `Uint8Array.fromBase64`): `client/mod.ts` bundled by
 * `deno bundle` as it is, imported by a Node script that builds, names, compiles (with a
 * cache token: base64) and runs a model, lists models, round-trips a memory, and runs a
 * float16 model through the Open Inference Protocol client with binary tensors (Node 20 has
 * no Float16Array: the client converts halves itself) against a real server.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { startTestServer } from "./server_fixture.ts";

const SCRIPT = `
import { NnClient, FuseCode } from "./sdk.mjs";
const client = new NnClient({ baseUrl: process.env.NNSERVE_URL });
const m = client.model();
const a = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
const b = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
const act = m.addOperand({ type: "INT32" });
const sum = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
m.setOperandValue(act, FuseCode.NONE);
m.addOperation("ADD", [a, b, act], [sum]);
m.identifyInputsAndOutputs([a, b], [sum]);
await m.finish({ name: "node-adder" });
const compilation = await client.compile(m, { cache: { token: new Uint8Array(32).fill(7) } });
const { outputs } = await compilation.compute([[1, 2], new Float32Array([3, 4])]);
const listed = await client.listModels({ name: "node-adder" });
const memory = await client.createMemory(new Uint8Array([1, 2, 3, 250]));
const read = await memory.read();
const h = client.model();
const half = { type: "TENSOR_FLOAT16", dimensions: [2] };
const [x, y, hact, hsum] = [h.addOperand(half), h.addOperand(half), h.addOperand({ type: "INT32" }), h.addOperand(half)];
h.setOperandValue(hact, FuseCode.NONE);
h.addOperation("ADD", [x, y, hact], [hsum]);
h.identifyInputsAndOutputs([x, y], [hsum]);
await h.finish({ name: "node-half" });
await client.compile(h);
const halves = await client.v2.infer("node-half", [
  { name: "input0", datatype: "FP16", shape: [2], data: [1.5, 2], binary: true },
  { name: "input1", datatype: "FP16", shape: [2], data: [0.25, -4], binary: true },
], { binaryOutputs: true });
console.log(JSON.stringify({
  float16Array: typeof globalThis.Float16Array === "function",
  halfSum: [...halves.outputs[0].data],
  halfType: halves.outputs[0].datatype,
  builtInBase64: typeof Uint8Array.prototype.toBase64 === "function",
  node: process.version,
  sum: [...outputs[0].data],
  cache: compilation.info.cache,
  listed: listed.models.map((x) => x.name),
  memory: [...read],
}));
`;

Deno.test("the SDK bundled as it is runs on Node: models, compilations with a cache token, executions, memories", async () => {
  const server = await startTestServer();
  const dir = await Deno.makeTempDir({ prefix: "nnserve-sdk-node-" });
  try {
    const bundle = await new Deno.Command(Deno.execPath(), {
      args: ["bundle", "--platform=browser", "-o", `${dir}/sdk.mjs`, "client/mod.ts"],
      cwd: new URL("../", import.meta.url),
      stdout: "piped",
      stderr: "piped",
    }).output();
    strictEqual(bundle.code, 0, new TextDecoder().decode(bundle.stderr));
    await Deno.writeTextFile(`${dir}/main.mjs`, SCRIPT);
    const run = await new Deno.Command("node", {
      args: ["main.mjs"],
      cwd: dir,
      env: { NNSERVE_URL: server.url },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(run.stdout);
    strictEqual(run.code, 0, new TextDecoder().decode(run.stderr));
    const result = JSON.parse(stdout.trim().split("\n").pop()!);
    ok(/^v\d+/.test(result.node), stdout);
    deepStrictEqual(result.sum, [4, 6]);
    strictEqual(result.cache, "miss", "the cache token went out as base64");
    deepStrictEqual(result.listed, ["node-adder"]);
    deepStrictEqual(result.memory, [1, 2, 3, 250]);
    deepStrictEqual([result.halfType, result.halfSum], ["FP16", [1.75, -2]]);
    // Node 20 and 22 lack the built-in: the SDK's fallback is what ran there.
    if (Number(result.node.slice(1).split(".")[0]) < 24) {
      strictEqual(result.builtInBase64, false);
      strictEqual(result.float16Array, false, "the client's own half conversion ran");
    }
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
