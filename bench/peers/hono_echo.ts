/** A Hono JSON echo on a loopback port (printed), the REST ceiling of the peers benchmark. */
import { Hono } from "hono";

const app = new Hono().post("/echo", async (c) => c.json(await c.req.json()));
Deno.serve({
  hostname: "127.0.0.1",
  port: 0,
  onListen: ({ port }) => console.log(`listening on http://127.0.0.1:${port}`),
}, app.fetch);
