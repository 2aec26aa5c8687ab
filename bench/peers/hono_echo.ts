/**
 * A Hono server on a loopback port (printed): a JSON echo, the REST ceiling of the peers
 * benchmark; an upload sink answering `?answer=` bytes (4000 unless said: MobileNet's
 * logits), the floor of sending a model's input and receiving its output over HTTP here; and
 * a WebSocket echo (`/ws`), the floor of a burst's round trip.
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
Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, app.fetch);
