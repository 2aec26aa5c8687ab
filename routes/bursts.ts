/**
 * `GET /v1/compilations/{id}/burst`: upgrades to a WebSocket, one burst per socket
 * (docs/burst-protocol.md). Binary frames carry requests and results; text frames carry
 * control messages. Deno pings the peer and closes a socket whose pong does not come within
 * the idle timeout, which releases the burst like any close.
 */
import { createRoute } from "@hono/zod-openapi";
import { upgradeWebSocket } from "hono/deno";
import type { BurstOptions, BurstSession } from "../driver/burst.ts";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../driver/errors.ts";
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
  return newRouter().openapi(openBurst, async (c, next) => {
    const owner = c.get("client");
    const { id } = c.req.valid("param");
    await driver.checkCompilation(owner, id);
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw invalid("a burst is a WebSocket: send an Upgrade: websocket request");
    }
    let session: BurstSession | undefined;
    const upgrade = upgradeWebSocket(() => ({
      onOpen(_event, ws) {
        const socket = ws.raw as WebSocket;
        socket.binaryType = "arraybuffer";
        session = driver.openBurst(owner, id, {
          sendBinary: (bytes) => socket.send(bytes),
          sendText: (text) => socket.send(text),
          close: (code, reason) => socket.close(code, reason),
          bufferedAmount: () => socket.bufferedAmount,
        }, options.burst);
      },
      onMessage(event) {
        const data = event.data;
        session?.receive(typeof data === "string" ? data : new Uint8Array(data as ArrayBuffer));
      },
      onClose() {
        if (session) driver.endBurst(session);
      },
      onError() {
        if (session) driver.endBurst(session);
      },
    }), { idleTimeout: options.idleTimeoutSeconds });
    // The upgrade helper is typed for a plain context; ours only adds variables.
    return (await upgrade(c as never, next)) as Response;
  });
}
