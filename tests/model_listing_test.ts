/**
 * Models have names and versions; `GET /v1/models` and `GET /v1/compilations` list a
 * client's own, a page at a time (every item exactly once across pages), filtered by name,
 * version or model; creation answers carry a `Location` that reads back what they created;
 * bad names, versions, limits and cursors are 400s naming the field. The SDK does the same.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { NnClient } from "../client/mod.ts";
import { onnxBytes } from "../tools/onnx_graphs.ts";
import { addModel, type TestServer, withTestServer } from "./server_fixture.ts";

const ALICE = { authorization: "Bearer key-a" };
const BOB = { authorization: "Bearer key-b" };
const KEYS = new Map([["key-a", "alice"], ["key-b", "bob"]]);

/** A two-input ONNX Add, for imports with a name. */
const ONNX_ADD = onnxBytes({
  inputs: [{ name: "a", dims: [2] }, { name: "b", dims: [2] }],
  outputs: [{ name: "sum", dims: [2] }],
  nodes: [{ op: "Add", inputs: ["a", "b"], outputs: ["sum"] }],
  initializers: [],
});

/** POST of a JSON model (or ONNX bytes) with a query; status, body and Location. */
async function register(
  server: TestServer,
  query: string,
  headers: Record<string, string>,
  onnx?: Uint8Array,
) {
  const response = await fetch(`${server.url}/v1/models${query}`, {
    method: "POST",
    headers: { ...headers, "content-type": onnx ? "application/onnx" : "application/json" },
    body: onnx ? new Uint8Array(onnx) : JSON.stringify(addModel(2)),
  });
  const body = await response.json();
  return { status: response.status, body, location: response.headers.get("location") };
}

/** The items of a listing's body. */
function itemsOf<T = { id: string }>(body: Record<string, unknown>, key: string): T[] {
  return body[key] as T[];
}

/** Every page of a listing, following `next` with pages of `limit`. */
async function allPages(
  server: TestServer,
  path: string,
  key: "models" | "compilations",
  limit: number,
): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const separator = path.includes("?") ? "&" : "?";
    const query = `${separator}limit=${limit}${
      cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""
    }`;
    const { status, body } = await server.request("GET", `${path}${query}`, undefined, ALICE);
    strictEqual(status, 200, JSON.stringify(body));
    const items = body[key] as { id: string }[];
    ok(items.length <= limit, `a page holds at most ${limit}`);
    ids.push(...items.map((m) => m.id));
    cursor = body.next as string | undefined;
    pages++;
  } while (cursor !== undefined);
  return { ids, pages };
}

Deno.test("models have names and versions and are listed a page at a time, only the client's own", async () => {
  await withTestServer({ apiKeys: KEYS }, async (server) => {
    const adder1 = await register(server, "?name=adder", ALICE);
    strictEqual(adder1.status, 201, JSON.stringify(adder1.body));
    deepStrictEqual([adder1.body.name, adder1.body.version], ["adder", "1"]);
    strictEqual(adder1.location, `/v1/models/${adder1.body.id}`);
    const read = await server.request("GET", adder1.location!, undefined, ALICE);
    deepStrictEqual([read.status, read.body.name, read.body.version], [200, "adder", "1"]);
    const adder2 = await register(server, "?name=adder&version=2", ALICE);
    const unnamed = await register(server, "", ALICE);
    strictEqual(unnamed.body.name, undefined);
    const imported = await register(server, "?name=onnx-add&version=7", ALICE, ONNX_ADD);
    strictEqual(imported.status, 201, JSON.stringify(imported.body));
    deepStrictEqual([imported.body.name, imported.body.version], ["onnx-add", "7"]);
    strictEqual(imported.location, `/v1/models/${imported.body.id}`);
    const gone = await register(server, "?name=adder&version=3", ALICE);
    strictEqual((await server.request("DELETE", gone.location!, undefined, ALICE)).status, 204);
    await register(server, "?name=adder", BOB);

    const mine = [adder1, adder2, unnamed, imported].map((r) => r.body.id as string).sort();
    const all = await server.request("GET", "/v1/models", undefined, ALICE);
    strictEqual(all.status, 200);
    deepStrictEqual(itemsOf(all.body, "models").map((m) => m.id).sort(), mine);
    strictEqual(all.body.next, undefined, "one page holds them all by default");
    // Pages of one and of three: each model exactly once, the last page without `next`.
    for (const [limit, pages] of [[1, 4], [3, 2]]) {
      const listed = await allPages(server, "/v1/models", "models", limit);
      deepStrictEqual([...listed.ids].sort(), mine, `pages of ${limit}`);
      ok(listed.pages >= pages, `${listed.pages} pages of ${limit}`);
    }
    const byName = await server.request("GET", "/v1/models?name=adder", undefined, ALICE);
    deepStrictEqual(
      itemsOf<{ version: string }>(byName.body, "models").map((m) => m.version).sort(),
      ["1", "2"],
    );
    const byVersion = await server.request(
      "GET",
      "/v1/models?name=adder&version=2",
      undefined,
      ALICE,
    );
    deepStrictEqual(itemsOf(byVersion.body, "models").map((m) => m.id), [adder2.body.id]);
    const bobs = await server.request("GET", "/v1/models", undefined, BOB);
    strictEqual(itemsOf(bobs.body, "models").length, 1, "bob sees only his own");
  });
});

Deno.test("bad names, versions, limits and cursors are 400s naming the field", async () => {
  await withTestServer({ apiKeys: KEYS }, async (server) => {
    for (const [query, field] of [["?name=a%20b", "name"], ["?name=x&version=0", "version"]]) {
      const { status, body } = await register(server, query, ALICE);
      strictEqual(status, 400, `${query}: ${JSON.stringify(body)}`);
      ok(JSON.stringify(body.path).includes(field), `${query} names ${field}: ${body.path}`);
    }
    const versionAlone = await register(server, "?version=2", ALICE);
    strictEqual(versionAlone.status, 400);
    ok(/version needs a name/.test(String(versionAlone.body.message)));
    for (const query of ["limit=0", "limit=1001", "limit=abc", "cursor=not-a-cursor"]) {
      for (const path of ["/v1/models", "/v1/compilations"]) {
        const { status, body } = await server.request("GET", `${path}?${query}`, undefined, ALICE);
        strictEqual(status, 400, `${path}?${query}: ${JSON.stringify(body)}`);
        strictEqual(body.status, "INVALID_ARGUMENT");
        ok(JSON.stringify(body.path).includes(query.split("=")[0]), JSON.stringify(body));
      }
    }
  });
});

Deno.test("compilations are listed a page at a time, of one model when asked, with a Location", async () => {
  await withTestServer({ apiKeys: KEYS }, async (server) => {
    const adder = await register(server, "?name=adder", ALICE);
    const other = await register(server, "", ALICE);
    const compile = async (model: string, headers = ALICE) => {
      const response = await fetch(`${server.url}/v1/compilations`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: JSON.stringify({ model }),
      });
      const body = await response.json();
      strictEqual(response.status, 201, JSON.stringify(body));
      strictEqual(response.headers.get("location"), `/v1/compilations/${body.id}`);
      return body.id as string;
    };
    const ids = [
      await compile(adder.body.id),
      await compile(adder.body.id),
      await compile(other.body.id),
    ];
    const listed = await allPages(server, "/v1/compilations", "compilations", 2);
    deepStrictEqual([...listed.ids].sort(), [...ids].sort());
    strictEqual(listed.pages, 2);
    const ofAdder = await server.request(
      "GET",
      `/v1/compilations?model=${adder.body.id}`,
      undefined,
      ALICE,
    );
    deepStrictEqual(
      itemsOf(ofAdder.body, "compilations").map((c) => c.id).sort(),
      ids.slice(0, 2).sort(),
    );
    const first = itemsOf(ofAdder.body, "compilations")[0];
    deepStrictEqual(Object.keys(first).sort(), [
      "createdAt",
      "devices",
      "id",
      "model",
      "preference",
      "priority",
    ]);
    const described = await server.request("GET", `/v1/compilations/${ids[2]}`, undefined, ALICE);
    strictEqual(described.status, 200);
    strictEqual(described.body.model, other.body.id);
    const bobs = await server.request("GET", "/v1/compilations", undefined, BOB);
    deepStrictEqual(bobs.body.compilations, [], "bob sees none of alice's");
  });
});

Deno.test("the SDK names models and lists models and compilations", async () => {
  await withTestServer({}, async (server) => {
    const client = new NnClient({ baseUrl: server.url });
    const m = client.model();
    const a = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    const b = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    const act = m.addOperand({ type: "INT32" });
    const sum = m.addOperand({ type: "TENSOR_FLOAT32", dimensions: [2] });
    m.setOperandValue(act, 0);
    m.addOperation("ADD", [a, b, act], [sum]);
    m.identifyInputsAndOutputs([a, b], [sum]);
    const id = await m.finish({ name: "sdk-adder", version: "4" });
    const info = await client.importOnnx(ONNX_ADD, { name: "sdk-onnx" });
    deepStrictEqual([info.name, info.version], ["sdk-onnx", "1"]);
    const page = await client.listModels({ name: "sdk-adder" });
    deepStrictEqual(page.models.map((x) => [x.id, x.name, x.version]), [[id, "sdk-adder", "4"]]);
    const first = await client.listModels({ limit: 1 });
    strictEqual(first.models.length, 1);
    ok(first.next, "a second page");
    const second = await client.listModels({ limit: 1, cursor: first.next });
    deepStrictEqual(
      [...first.models, ...second.models].map((x) => x.id).sort(),
      [id, info.id].sort(),
    );
    const compilation = await client.compile(id);
    const compilations = await client.listCompilations({ model: id });
    deepStrictEqual(compilations.compilations.map((c) => c.id), [compilation.id]);
  });
});
