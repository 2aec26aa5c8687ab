/**
 * Authentication: `?access_token=` only on the burst upgrade, API key parsing that never
 * echoes key material, and keys that name exactly one client.
 */
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { createHash } from "node:crypto";
import { parseApiKeys } from "../routes/auth.ts";
import { sha256 } from "../routes/sha256.ts";
import { burstUrl, MessageSocket } from "./burst_fixture.ts";
import {
  addModel,
  finishWithin,
  mainProcess,
  startTestServer,
  type TestServer,
} from "./server_fixture.ts";

const SECRET = "Zq8xV3pL0mN7wR2tKd5";

/** Every 4-character piece of the secret: none may appear in a message. */
function leaksSecret(text: string, secret = SECRET): boolean {
  for (let i = 0; i + 4 <= secret.length; i++) {
    if (text.includes(secret.slice(i, i + 4))) return true;
  }
  return false;
}

/** The status code of a request written by hand (fetch will not send `Upgrade`). */
async function rawStatus(server: TestServer, head: string): Promise<number> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.port });
  try {
    await conn.write(new TextEncoder().encode(`${head}\r\nHost: x\r\nConnection: close\r\n\r\n`));
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    const line = new TextDecoder().decode(buffer.subarray(0, n ?? 0)).split("\r\n")[0];
    return Number(line.split(" ")[1]);
  } finally {
    conn.close();
  }
}

async function withKeys(fn: (server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer({
    apiKeys: new Map([["key-a", "alice"], ["key-b", "bob"]]),
  });
  try {
    await fn(server);
  } finally {
    await server.close();
    await Deno.remove(server.dataDir, { recursive: true });
  }
}

Deno.test("access_token is refused outside the burst route, even on an Upgrade: websocket request", async () => {
  await withKeys(async (server) => {
    const upgrade = "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==";
    strictEqual(
      await rawStatus(server, `GET /v1/devices?access_token=key-a HTTP/1.1\r\n${upgrade}`),
      401,
    );
    strictEqual(await rawStatus(server, `GET /v1/devices?access_token=key-a HTTP/1.1`), 401);
    strictEqual(
      await rawStatus(server, `GET /v1/models/x?access_token=key-a HTTP/1.1\r\n${upgrade}`),
      401,
    );
    // On the burst route it must be a GET upgrade.
    const model = await server.request("POST", "/v1/models", addModel(2), {
      authorization: "Bearer key-a",
    });
    const compilation = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
    }, { authorization: "Bearer key-a" });
    const burst = `/v1/compilations/${compilation.body.id}/burst?access_token=key-a`;
    strictEqual(await rawStatus(server, `GET ${burst} HTTP/1.1`), 401);
    strictEqual(await rawStatus(server, `DELETE ${burst} HTTP/1.1\r\n${upgrade}`), 401);
    // The header still works everywhere.
    const devices = await server.request("GET", "/v1/devices", undefined, {
      authorization: "Bearer key-a",
    });
    strictEqual(devices.status, 200);
  });
});

Deno.test("the burst route accepts access_token on a real WebSocket; a wrong one is refused", async () => {
  await withKeys(async (server) => {
    const auth = { authorization: "Bearer key-a" };
    const model = await server.request("POST", "/v1/models", addModel(2), auth);
    const compilation = await server.request("POST", "/v1/compilations", {
      model: model.body.id,
    }, auth);
    const id = String(compilation.body.id);
    const { socket, ready } = await MessageSocket.open(burstUrl(server.url, id, "key-a"));
    strictEqual(ready.type, "ready");
    await socket.close();
    // Bob's key does not open Alice's compilation (404 before the upgrade), nor does a
    // wrong key, nor a prefix of a right one.
    for (const token of ["key-b", "key-", "key-ab", "wrong"]) {
      const refused = new MessageSocket(burstUrl(server.url, id, token));
      const closed = await refused.closed;
      ok(closed.code !== 1000, `${token}: ${closed.code}`);
    }
  });
});

Deno.test("bearer keys: each configured key is its client; near misses are 401", async () => {
  await withKeys(async (server) => {
    const created = await server.request("POST", "/v1/memories", { size: 4 }, {
      authorization: "Bearer key-a",
    });
    strictEqual(created.status, 201);
    const path = `/v1/memories/${created.body.id}`;
    const status = async (key: string) => {
      const response = await fetch(`${server.url}${path}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.body?.cancel();
      return response.status;
    };
    deepStrictEqual(
      [await status("key-a"), await status("key-b"), await status("key-"), await status("key-aa")],
      [200, 404, 401, 401],
    );
  });
});

Deno.test("parseApiKeys errors never contain key material", () => {
  for (
    const text of [
      SECRET,
      `alice:k1,${SECRET}`,
      `alice:k1\n:${SECRET}`,
      `${SECRET}:`,
      `alice:${SECRET},bob:${SECRET}`,
    ]
  ) {
    throws(() => parseApiKeys(text), (e: Error) => {
      ok(!leaksSecret(e.message), `leaks the key: ${e.message}`);
      ok(!e.message.includes("\n"), e.message);
      return true;
    });
  }
});

Deno.test("a key given to two names is an error; one name may hold several keys", () => {
  throws(() => parseApiKeys(`alice:${SECRET},bob:${SECRET}`), (e: Error) => {
    ok(/alice/.test(e.message) && /bob/.test(e.message), e.message);
    return true;
  });
  const keys = parseApiKeys(`alice:${SECRET},alice:other-key,alice:${SECRET}`);
  deepStrictEqual([...keys.values()], ["alice", "alice"]);
  strictEqual(keys.size, 2);
});

Deno.test("main.ts with a malformed NNSERVE_API_KEYS exits with one line that names no key", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "nnserve-test-" });
  try {
    const result = await finishWithin(
      mainProcess(dataDir, { NNSERVE_API_KEYS: `alice:k1,${SECRET}` }),
      30_000,
    );
    if (!result) throw new Error("main.ts kept running with a malformed NNSERVE_API_KEYS");
    const stderr = result.stderr;
    ok(result.code !== 0);
    deepStrictEqual(stderr.trim().split("\n").length, 1, stderr);
    ok(stderr.includes("NNSERVE_API_KEYS"), stderr);
    ok(!leaksSecret(stderr), stderr);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("sha256() is node:crypto's SHA-256 of the UTF-8 bytes, over one block and several", () => {
  const hex = (bytes: Uint8Array) =>
    [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  strictEqual(
    hex(sha256("")),
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  const out = new Uint8Array(32);
  // Lengths across the padding's edges (55, 56, 64 bytes) and several blocks, some not ASCII.
  for (let n = 0; n < 200; n++) {
    const text = Array.from({ length: n }, (_, i) => String.fromCharCode(33 + (i * 7 + n) % 94))
      .join("") + (n % 3 === 0 ? "é✓😀" : "");
    strictEqual(sha256(text, out), out);
    strictEqual(hex(out), createHash("sha256").update(text).digest("hex"), `length ${n}`);
  }
});
