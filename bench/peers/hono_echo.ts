/**
 * A Hono server on a loopback port (printed): a JSON echo, the REST ceiling of the peers
 * benchmark, and an upload sink answering 4000 bytes (MobileNet's logits), the floor of
 * sending a tensor's bytes over HTTP on this machine.
 */
import { Hono } from "hono";

const LOGITS = new Uint8Array(4000);
const app = new Hono()
  .post("/echo", async (c) => c.json(await c.req.json()))
  .post("/upload", async (c) => {
    await c.req.arrayBuffer();
    return c.body(LOGITS, 200, { "content-type": "application/octet-stream" });
  });
Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, app.fetch);
