/**
 * `GET /v1/compilations/{id}/burst`: upgrades to a WebSocket, one burst per socket
 * (docs/burst-protocol.md). Binary frames carry requests and results; text frames carry
 * control messages. Deno pings the peer and closes a socket whose pong does not come within
 * the idle timeout, which releases the burst like any close.
 */
import { createRoute } from "@hono/zod-openapi";
import type { BurstOptions, BurstSession } from "../driver/burst.ts";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../nnapi/errors.ts";
import { newRouter } from "./router.ts";
import { errorResponses, IdParams } from "./schemas.ts";

/** Burst settings of the HTTP layer. */
export interface BurstRouteOptions {
  /** Seconds without a pong before a peer is considered dead. */
  idleTimeoutSeconds: number;
  burst?: Partial<BurstOptions>;
}

const openBurst = createRoute({
  method: "get",
  path: "/v1/compilations/{id}/burst",
  summary: "Open a burst: upgrade to a WebSocket (docs/burst-protocol.md)",
  request: { params: IdParams },
  responses: {
    101: { description: "Switching protocols: the burst is open" },
    ...errorResponses(400, 401, 404),
  },
});

/** Burst routes. */
export function burstRoutes(driver: Driver, options: BurstRouteOptions) {
  return newRouter().openapi(openBurst, async (c) => {
    const owner = c.get("client");
    const { id } = c.req.valid("param");
    await driver.checkCompilation(owner, id);
    // The header is case-insensitive (RFC 6455); hono/deno's helper compares it exactly,
    // so the upgrade is Deno's own.
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw invalid("a burst is a WebSocket: send an Upgrade: websocket request");
    }
    const { response, socket } = Deno.upgradeWebSocket(c.req.raw, {
      idleTimeout: options.idleTimeoutSeconds,
    });
    socket.binaryType = "arraybuffer";
    let session: BurstSession | undefined;
    const end = () => {
      if (session) driver.endBurst(session);
    };
    socket.onopen = () => {
      session = driver.openBurst(owner, id, {
        sendBinary: (bytes) => socket.send(bytes),
        sendText: (text) => socket.send(text),
        close: (code, reason) => socket.close(code, reason),
        bufferedAmount: () => socket.bufferedAmount,
      }, options.burst);
    };
    socket.onmessage = (event) => {
      const data = event.data;
      session?.receive(typeof data === "string" ? data : new Uint8Array(data as ArrayBuffer));
    };
    socket.onclose = end;
    socket.onerror = end;
    return response;
  });
}
