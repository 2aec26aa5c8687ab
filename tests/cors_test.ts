/**
 * CORS for browser apps (NNSERVE_CORS_ORIGINS): a listed origin gets preflights answered
 * (before authentication) and its answers readable, with the headers apps need exposed;
 * other origins, and every origin when none is configured, get no CORS headers.
 */
import { ok, strictEqual } from "node:assert/strict";
import { withTestServer } from "./server_fixture.ts";

const APP = "https://app.example";
const KEYS = new Map([["key-a", "alice"]]);

Deno.test("a configured origin gets preflights and readable answers; others get nothing", async () => {
  await withTestServer({ apiKeys: KEYS, corsOrigins: [APP] }, async (server) => {
    const preflight = await fetch(`${server.url}/v1/models`, {
      method: "OPTIONS",
      headers: {
        origin: APP,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    await preflight.body?.cancel();
    strictEqual(preflight.status, 204, "answered before authentication");
    strictEqual(preflight.headers.get("access-control-allow-origin"), APP);
    ok(/authorization/i.test(preflight.headers.get("access-control-allow-headers") ?? ""));
    const get = await fetch(`${server.url}/v1/models`, {
      headers: { origin: APP, authorization: "Bearer key-a" },
    });
    await get.body?.cancel();
    strictEqual(get.status, 200);
    strictEqual(get.headers.get("access-control-allow-origin"), APP);
    ok(/x-request-id/i.test(get.headers.get("access-control-expose-headers") ?? ""));
    const other = await fetch(`${server.url}/v1/models`, {
      headers: { origin: "https://elsewhere.example", authorization: "Bearer key-a" },
    });
    await other.body?.cancel();
    strictEqual(other.headers.get("access-control-allow-origin"), null);
  });
  await withTestServer({}, async (server) => {
    const response = await fetch(`${server.url}/v1/models`, { headers: { origin: APP } });
    await response.body?.cancel();
    strictEqual(response.headers.get("access-control-allow-origin"), null, "off by default");
  });
});
