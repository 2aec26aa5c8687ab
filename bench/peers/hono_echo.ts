/**
 * A Hono server on a loopback port (printed): a JSON echo, the REST ceiling of the peers
 * benchmark; an upload sink answering `?answer=` bytes (4000 unless said: MobileNet's
 * logits), the floor of sending a model's input and receiving its output over HTTP here; and
 * a WebSocket echo (`/ws`), the floor of a burst's round trip. Beside it, a bare TCP echo
 * (its port printed first), the floor of any round trip between two processes here.
 */
import { Hono } from "hono";

const app = new Hono()
  .post("/echo", async (c) => c.json(await c.req.json()))
  .post("/upload", async (c) => {
    await c.req.arrayBuffer();
    const answer = new Uint8Array(Number(c.req.query("answer") ?? 4000));
    return c.body(answer, 200, { "content-type": "application/octet-stream" });
  })
  .get("/ws", (c) => {
    const { socket, response } = Deno.upgradeWebSocket(c.req.raw);
    socket.onmessage = (event) => socket.send(event.data);
    return response;
  });
const tcp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
console.log(`tcp echo on port ${tcp.addr.port}`);
(async () => {
  for await (const conn of tcp) {
    conn.setNoDelay(true);
    (async () => {
      const buffer = new Uint8Array(64 * 1024);
      try {
        for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
          for (let at = 0; at < n;) at += await conn.write(buffer.subarray(at, n));
        }
      } catch {
        // The client went away.
      } finally {
        conn.close();
      }
    })();
  }
})();
Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, app.fetch);
