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

interface OpenApiOperation {
  operationId?: string;
  tags?: string[];
  summary?: string;
  security?: unknown[];
}

Deno.test("every operation has a unique operationId, a tag, a summary and its security", async () => {
  const server = await startTestServer();
  try {
    const doc = await (await fetch(`${server.url}/openapi.json`)).json() as {
      paths: Record<string, Record<string, OpenApiOperation>>;
      security: unknown[];
      tags: { name: string; description: string }[];
      servers: unknown[];
    };
    deepStrictEqual(doc.security, [{ bearer: [] }], "the bearer scheme applies at the root");
    ok(doc.servers.length > 0);
    const tags = new Set(doc.tags.map((t) => t.name));
    const ids = new Set<string>();
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        const where = `${method} ${path}`;
        ok(operation.operationId, `${where} has an operationId`);
        ok(!ids.has(operation.operationId), `${where}: operationId ${operation.operationId} once`);
        ids.add(operation.operationId);
        ok(operation.tags?.length === 1 && tags.has(operation.tags[0]), `${where} has a tag`);
        ok(operation.summary, `${where} has a summary`);
        const open = /^\/(healthz|livez|readyz|metrics|demo)/.test(path);
        if (open) deepStrictEqual(operation.security, [], `${where} needs no key`);
        else strictEqual(operation.security, undefined, `${where} takes the root's bearer`);
      }
    }
    strictEqual(doc.paths["/v1/models"].get.operationId, "getModels");
    strictEqual(
      doc.paths["/v1/compilations/{id}/executions"].post.operationId,
      "postCompilationsByIdExecutions",
    );
  } finally {
    await server.close();
  }
});

Deno.test("the OpenAPI document passes Redocly's recommended rules with zero errors", async () => {
  const server = await startTestServer();
  const dir = await Deno.makeTempDir({ prefix: "nnserve-openapi-" });
  try {
    const file = `${dir}/openapi.json`;
    await Deno.writeTextFile(file, await (await fetch(`${server.url}/openapi.json`)).text());
    // Redocly CLI from npm (a pinned version), run by Node as npx runs it.
    const result = await new Deno.Command("npx", {
      args: ["--yes", "@redocly/cli@2.77.0", "lint", file, "--format=json"],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1", REDOCLY_TELEMETRY: "off" },
    }).output();
    const stdout = new TextDecoder().decode(result.stdout);
    const report = JSON.parse(stdout.slice(stdout.indexOf("{"))) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; severity: string; message: string }[];
    };
    const errors = report.problems.filter((p) => p.severity === "error");
    deepStrictEqual(errors, [], "no Redocly errors");
    strictEqual(report.totals.errors, 0);
    strictEqual(result.code, 0, new TextDecoder().decode(result.stderr));
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
});
