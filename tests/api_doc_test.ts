/**
 * docs/api.md stays true to the routes the server serves: every operation of the generated
 * OpenAPI document has a heading `METHOD /path` there, and every `METHOD /path` the document
 * names in backticks (headings and prose alike) is a route the server really serves.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { withTestServer } from "./server_fixture.ts";

const API_DOC = new URL("../docs/api.md", import.meta.url);

/** Routes served outside the OpenAPI document: the route that serves the document itself. */
const OUTSIDE_THE_DOCUMENT = ["GET /openapi.json"];

const METHOD = "(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS)";

/** A route's heading: `### \`GET /v1/models/{id}\`` (any heading level, nothing after it). */
const ROUTE_HEADING = new RegExp(`^#{2,6} \`(${METHOD} /[^\`\\s]*)\`\\s*$`);

/** A backticked route anywhere in the text; a query string may follow the path. */
const ROUTE_MENTION = new RegExp(`\`(${METHOD} /[^\`\\s?]*)(?:\\?[^\`\\s]*)?\``, "g");

/** Every `METHOD /path` of the OpenAPI document the running server generates. */
async function documentedRoutes(url: string): Promise<string[]> {
  const response = await fetch(`${url}/openapi.json`);
  strictEqual(response.status, 200);
  const doc = await response.json() as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`)
  );
}

Deno.test("docs/api.md has a heading for every route of the OpenAPI document, and names no other", async () => {
  const text = await Deno.readTextFile(API_DOC);
  const lines = text.split("\n");
  const headings = lines.flatMap((line) => ROUTE_HEADING.exec(line)?.[1] ?? []);
  const mentions = [...text.matchAll(ROUTE_MENTION)].map((m) => m[1]);
  await withTestServer({}, async (server) => {
    const routes = await documentedRoutes(server.url);
    ok(routes.length >= 50, `expected at least 50 routes, found ${routes.length}`);
    const served = new Set([...routes, ...OUTSIDE_THE_DOCUMENT]);

    const undocumented = routes.filter((route) => !headings.includes(route));
    deepStrictEqual(undocumented, [], `routes without a heading in docs/api.md: ${undocumented}`);

    const stale = [...new Set(mentions)].filter((route) => !served.has(route));
    deepStrictEqual(stale, [], `docs/api.md names routes the server does not serve: ${stale}`);

    const twice = headings.filter((route, k) => headings.indexOf(route) !== k);
    deepStrictEqual(twice, [], `routes with more than one heading: ${twice}`);
  });
});

Deno.test("the route patterns of the test read what docs/api.md writes", () => {
  deepStrictEqual(ROUTE_HEADING.exec("### `GET /v1/models/{id}`")?.[1], "GET /v1/models/{id}");
  strictEqual(ROUTE_HEADING.exec("### `GET /v1/models/{id}` and more"), null);
  const mentions = [..."`PUT /v1/memories/{id}?offset=K` and `GET /healthz`".matchAll(
    ROUTE_MENTION,
  )].map((m) => m[1]);
  deepStrictEqual(mentions, ["PUT /v1/memories/{id}", "GET /healthz"]);
});
