import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { buildApp } from "../routes/app.ts";
import { startTestServer } from "./server_fixture.ts";

Deno.test("the OpenAPI document lists every route the app serves", async () => {
  const server = await startTestServer();
  try {
    const response = await fetch(`${server.url}/openapi.json`);
    strictEqual(response.status, 200);
    const doc = await response.json() as { paths: Record<string, Record<string, unknown>> };
    const app = buildApp(server.driver, { apiKeys: new Map() });
    const served = app.routes
      .filter((r) => r.method !== "ALL" && r.path !== "/openapi.json")
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`);
    const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((m) => `${m} ${path}`)
    );
    ok(served.length >= 10, `expected at least 10 routes, found ${served.length}`);
    deepStrictEqual([...new Set(served)].sort(), [...new Set(documented)].sort());
    for (const path of ["/v1/models", "/v1/compilations/{id}/executions", "/healthz"]) {
      ok(path in doc.paths, `${path} is documented`);
    }
  } finally {
    await server.close();
  }
});
