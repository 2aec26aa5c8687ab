import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { RouteConfig } from "@hono/zod-openapi";
import { buildApp } from "../routes/app.ts";
import { INFERENCE_HEADER_LENGTH } from "../routes/binary_tensors.ts";
import { ADD_MODEL, EXAMPLE_IDS } from "../routes/examples.ts";
import { ExecutionRequest, JSON_MEDIA_TYPE } from "../routes/schemas.ts";
import { InferRequest } from "../routes/v2/infer.ts";
import { RepositoryIndexRequest } from "../routes/v2/repository.ts";
import { RegisterRegionBody } from "../routes/v2/shared_memory.ts";
import { startTestServer, type TestServer, withTestServer } from "./server_fixture.ts";

Deno.test("the OpenAPI document lists every route the app serves", async () => {
  const server = await startTestServer();
  try {
    const response = await fetch(`${server.url}/openapi.json`);
    strictEqual(response.status, 200);
    const doc = await response.json() as { paths: Record<string, Record<string, unknown>> };
    const app = buildApp(server.service, { apiKeys: new Map() });
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
        const open = /^\/($|healthz|livez|readyz|metrics|demo|v2$|v2\/health\/)/.test(path);
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

Deno.test("the OpenAPI document passes Redocly's recommended rules and example checks with zero errors", async () => {
  const server = await startTestServer();
  const dir = await Deno.makeTempDir({ prefix: "nnserve-openapi-" });
  try {
    const file = `${dir}/openapi.json`;
    await Deno.writeTextFile(file, await (await fetch(`${server.url}/openapi.json`)).text());
    // The recommended rules, with every example checked against its schema as an error (by
    // Redocly's own JSON Schema validator; additional properties only where a schema allows).
    const config = `${dir}/redocly.yaml`;
    await Deno.writeTextFile(
      config,
      [
        "extends: [recommended]",
        "rules:",
        "  no-invalid-media-type-examples: {severity: error, allowAdditionalProperties: false}",
        "  no-invalid-parameter-examples: error",
        "  no-invalid-schema-examples: error",
        "",
      ].join("\n"),
    );
    // Redocly CLI from npm (a pinned version), run by Node as npx runs it.
    const result = await new Deno.Command("npx", {
      args: ["--yes", "@redocly/cli@2.77.0", "lint", file, `--config=${config}`, "--format=json"],
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

/** The parts of an OpenAPI document these tests read. */
interface Examples {
  example?: unknown;
  examples?: Record<string, { value: unknown }>;
}
interface MediaType extends Examples {
  schema?: { type?: string; format?: string; description?: string };
}
interface Parameter extends Examples {
  name: string;
  in: "path" | "query" | "header";
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, MediaType> };
  responses: Record<string, { content?: Record<string, MediaType> }>;
}
type Document = { paths: Record<string, Record<string, Operation>> };

async function openApiDocument(server: TestServer): Promise<Document> {
  return await (await fetch(`${server.url}/openapi.json`)).json();
}

/** Every operation of the document as `method path` and the operation. */
function operations(doc: Document): [string, Operation][] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]): [string, Operation] => [
      `${method} ${path}`,
      operation,
    ])
  );
}

/** The example values of a media type or parameter (`example` and each of `examples`). */
function examplesOf(holder: Examples): unknown[] {
  const named = Object.values(holder.examples ?? {}).map((example) => example.value);
  return holder.example === undefined ? named : [holder.example, ...named];
}

/** The response of an operation a client asks it for: its first 2xx (or 101). */
function successCode(operation: Operation): string {
  return Object.keys(operation.responses).filter((code) => /^(2..|101)$/.test(code)).sort()[0];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

Deno.test("every operation has an example, and every JSON body and success answer its own", async () => {
  await withTestServer({}, async (server) => {
    const doc = await openApiDocument(server);
    for (const [where, operation] of operations(doc)) {
      const bodies = Object.entries(operation.requestBody?.content ?? {});
      // An operation may only refuse (CUDA shared memory): then it has no success answer.
      const success = operation.responses[successCode(operation)];
      const answers = Object.entries(success?.content ?? {});
      const all = [
        ...(operation.parameters ?? []),
        ...bodies.map(([, media]) => media),
        ...Object.values(operation.responses).flatMap((r) => Object.values(r.content ?? {})),
      ].flatMap(examplesOf);
      ok(all.length > 0, `${where} has an example`);
      for (const [type, media] of [...bodies, ...answers]) {
        if (!JSON_MEDIA_TYPE.test(type)) continue;
        ok(examplesOf(media).length > 0, `${where}: its ${type} body has an example`);
      }
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== "path" || !/^(id|token)$/.test(parameter.name)) continue;
        ok(examplesOf(parameter).length > 0, `${where}: {${parameter.name}} has an example`);
      }
    }
    for (const [kind, id] of Object.entries(EXAMPLE_IDS)) {
      // A buffer token is its compilation's id, a dot and a UUID (a balancer routes on it).
      const parts = kind === "buffer" ? id.split(".") : [id];
      ok(parts.every((part) => UUID.test(part)), `${kind} id ${id}`);
    }
    strictEqual(EXAMPLE_IDS.buffer.split(".")[0], EXAMPLE_IDS.compilation);
    const model = doc.paths["/v1/models"].post.requestBody!.content["application/json"];
    deepStrictEqual(model.example, ADD_MODEL);
  });
});

/** Something zod parses with. */
interface Parser {
  safeParse(value: unknown): { success: boolean; error?: { issues: unknown } };
}

/** The zod schema of a route definition's media type (a `$ref` by the schema it names). */
function zodSchema(media: unknown): Parser {
  const refs: Record<string, Parser> = {
    "#/components/schemas/ExecutionRequest": ExecutionRequest,
    "#/components/schemas/V2InferRequest": InferRequest,
    "#/components/schemas/V2RegisterRegion": RegisterRegionBody,
    "#/components/schemas/V2RepositoryIndexRequest": RepositoryIndexRequest,
  };
  const schema = (media as { schema?: Partial<Parser> & { $ref?: string } } | undefined)?.schema;
  if (typeof schema?.safeParse === "function") return schema as Parser;
  const referenced = schema?.$ref === undefined ? undefined : refs[schema.$ref];
  ok(referenced, `no zod schema for ${JSON.stringify(schema)}`);
  return referenced;
}

Deno.test("every example in the document parses with the zod schema it documents", async () => {
  await withTestServer({}, async (server) => {
    const doc = await openApiDocument(server);
    const app = buildApp(server.service, { apiKeys: new Map() });
    const routes = new Map<string, RouteConfig>();
    for (const definition of app.openAPIRegistry.definitions) {
      if (definition.type === "route") {
        routes.set(`${definition.route.method} ${definition.route.path}`, definition.route);
      }
    }
    let checked = 0;
    const check = (where: string, schema: Parser, values: unknown[]) => {
      for (const value of values) {
        const result = schema.safeParse(value);
        ok(result.success, `${where}: ${JSON.stringify(result.error?.issues)}`);
        checked++;
      }
    };
    for (const [where, operation] of operations(doc)) {
      const route = routes.get(where);
      ok(route, `${where} has a route definition`);
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
        const values = examplesOf(media);
        if (values.length === 0) continue;
        check(`${where} request ${type}`, zodSchema(route.request?.body?.content[type]), values);
      }
      for (const [code, response] of Object.entries(operation.responses)) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          const values = examplesOf(media);
          if (values.length === 0) continue;
          const content = (route.responses[code] as { content?: Record<string, unknown> }).content;
          check(`${where} ${code} ${type}`, zodSchema(content?.[type]), values);
        }
      }
      const locations = { path: "params", query: "query", header: "headers" } as const;
      for (const parameter of operation.parameters ?? []) {
        const object = route.request?.[locations[parameter.in]] as
          | { shape: Record<string, Parser> }
          | undefined;
        const schema = object?.shape[parameter.name];
        ok(schema, `${where}: parameter ${parameter.name} has a zod schema`);
        check(`${where} ${parameter.name}`, schema, examplesOf(parameter));
      }
    }
    ok(checked >= 40, `checked ${checked} examples`);
  });
});

/** The bodies that are not JSON the routes read and write: operation, where, media type. */
const RAW_BODIES: [string, "request" | "200" | "206", string][] = [
  ["post /v1/memories", "request", "application/octet-stream"],
  ["get /v1/memories/{id}", "200", "application/octet-stream"],
  ["get /v1/memories/{id}", "206", "application/octet-stream"],
  ["put /v1/memories/{id}", "request", "application/octet-stream"],
  ["post /v1/models", "request", "application/onnx"],
  ["post /v1/compilations/{id}/executions", "request", "application/octet-stream"],
  ["post /v1/compilations/{id}/executions", "200", "application/octet-stream"],
  ["get /metrics", "200", "text/plain"],
  ["get /demo", "200", "text/html"],
  ["get /demo/{asset}", "200", "text/javascript"],
  ["get /demo/{asset}", "200", "text/css"],
];

/** Media types of raw bytes (as opposed to text). */
const BINARY_MEDIA_TYPES = new Set(["application/octet-stream", "application/onnx"]);

Deno.test("every body that is not JSON is documented with its media type, format and meaning", async () => {
  await withTestServer({}, async (server) => {
    const doc = await openApiDocument(server);
    const byName = new Map(operations(doc));
    for (const [where, at, type] of RAW_BODIES) {
      const operation = byName.get(where)!;
      const content = at === "request"
        ? operation.requestBody?.content
        : operation.responses[at]?.content;
      ok(content?.[type], `${where} ${at} lists ${type}`);
    }
    for (const [where, operation] of byName) {
      const contents = [
        operation.requestBody?.content ?? {},
        ...Object.values(operation.responses).map((r) => r.content ?? {}),
      ];
      for (const [type, media] of contents.flatMap((c) => Object.entries(c))) {
        if (JSON_MEDIA_TYPE.test(type)) continue;
        strictEqual(media.schema?.type, "string", `${where} ${type} is a string`);
        if (BINARY_MEDIA_TYPES.has(type)) {
          strictEqual(media.schema?.format, "binary", `${where} ${type} is binary`);
        }
        ok((media.schema?.description ?? "").length >= 20, `${where} ${type} says what it is`);
      }
    }
    const execution = byName.get("post /v1/compilations/{id}/executions")!;
    const framed = [
      execution.requestBody!.content["application/octet-stream"],
      execution.responses[200].content!["application/octet-stream"],
    ];
    for (const media of framed) {
      ok(media.schema?.description?.includes(INFERENCE_HEADER_LENGTH), "framed bodies described");
    }
  });
});

Deno.test("the media types the routes read and answer are those the document lists", async () => {
  await withTestServer({}, async (server) => {
    const doc = await openApiDocument(server);
    const memory = await server.request("POST", "/v1/memories", { size: 8 });
    const model = await server.request("POST", "/v1/models", ADD_MODEL);
    const compilation = await server.request("POST", "/v1/compilations", { model: model.body.id });
    const header = new TextEncoder().encode(JSON.stringify({
      inputs: [{ parameters: { binary_data_size: 8 } }, { parameters: { binary_data_size: 8 } }],
    }));
    const framed = new Uint8Array(header.byteLength + 16);
    framed.set(header);
    const octets = { "content-type": "application/octet-stream" };
    const framing = { ...octets, [INFERENCE_HEADER_LENGTH]: String(header.byteLength) };
    const json = { "content-type": "application/json" };
    const run = JSON.stringify({
      inputs: [{ data: [1, 2] }, { data: [3, 4] }],
      outputEncoding: "binary",
    });
    const memoryPath = `/v1/memories/${memory.body.id}`;
    const executions = `/v1/compilations/${compilation.body.id}/executions`;
    // Operation, the request (path and init), and the status it answers.
    const cases: [string, string, RequestInit, number][] = [
      ["post /v1/memories", "/v1/memories", { headers: octets, body: new Uint8Array(8) }, 201],
      ["get /v1/memories/{id}", memoryPath, {}, 200],
      ["get /v1/memories/{id}", memoryPath, { headers: { range: "bytes=0-3" } }, 206],
      ["put /v1/memories/{id}", `${memoryPath}?offset=4`, {
        headers: octets,
        body: new Uint8Array(4),
      }, 204],
      [
        "post /v1/compilations/{id}/executions",
        executions,
        { headers: framing, body: framed },
        200,
      ],
      [
        "post /v1/compilations/{id}/executions",
        executions,
        { headers: { ...framing, accept: "application/octet-stream" }, body: framed },
        200,
      ],
      ["post /v1/compilations/{id}/executions", executions, { headers: json, body: run }, 200],
      ["get /metrics", "/metrics", {}, 200],
      ["get /demo", "/demo", {}, 200],
      ["get /demo/{asset}", "/demo/demo.js", {}, 200],
      ["get /demo/{asset}", "/demo/demo.css", {}, 200],
      ["get /demo/{asset}", "/demo/model.json", {}, 200],
    ];
    for (const [where, path, init, status] of cases) {
      const [method, template] = where.split(" ");
      const operation = doc.paths[template][method];
      const response = await fetch(`${server.url}${path}`, { method, ...init });
      await response.body?.cancel();
      strictEqual(response.status, status, `${where} (${path})`);
      const sent = new Headers(init.headers).get("content-type");
      if (sent) ok(sent in operation.requestBody!.content, `${where} takes ${sent}: documented`);
      const type = response.headers.get("content-type")?.split(";")[0];
      if (type) {
        ok(
          type in (operation.responses[status].content ?? {}),
          `${where} answers ${type}: documented`,
        );
      }
    }
  });
});

Deno.test("GET / answers an index of the entry points, without a key, and each answers", async () => {
  await withTestServer({ apiKeys: new Map([["key-a", "alice"]]) }, async (server) => {
    const response = await fetch(`${server.url}/`);
    strictEqual(response.status, 200);
    const index = await response.json() as { name: string; links: Record<string, string> };
    strictEqual(index.name, "nnserve");
    const headers = { authorization: "Bearer key-a" };
    for (const [what, path] of Object.entries(index.links)) {
      const linked = await fetch(`${server.url}${path}`, { headers });
      await linked.body?.cancel();
      strictEqual(linked.status, 200, `${what}: ${path}`);
    }
  });
});
