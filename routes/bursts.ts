/**
 * `GET /v1/compilations/{id}/burst`: upgrades to a WebSocket, one burst per socket
 * (docs/burst-protocol.md). Binary frames carry requests and results; text frames carry
 * control messages. Deno pings the peer and closes a socket whose pong does not come within
 * the idle timeout, which releases the burst like any close.
 */
import { createRoute } from "@hono/zod-openapi";
import type { BurstOptions, BurstSession } from "../driver/burst/session.ts";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../nnapi/errors.ts";
import { newRouter } from "./router.ts";
import { CompilationIdParams, errorResponses } from "./schemas.ts";

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
  request: { params: CompilationIdParams },
  responses: {
    101: {
      description: "Switching protocols: the burst is open. Binary WebSocket frames then carry " +
        "requests and results, text frames control messages (docs/burst-protocol.md)",
    },
    ...errorResponses(400, 401, 404, 429),
  },
});

/** How long the peer must have sent nothing before the server's close frame can go out. */
const QUIET_MS = 20;
/** How long a close waits for the peer to pause before the connection is dropped. */
const CLOSE_WAIT_MS = 10_000;

/**
 * Closes a server socket once its peer pauses. Deno (2.9) ends a closing server socket
 * without its close frame when a message is handed to it before the frame is written, and a
 * close() made inside onmessage always loses that race while more frames are buffered; so a
 * client that keeps sending would never learn the close code. The close is made from a timer
 * once no message has come for QUIET_MS and none comes over one more turn of the event loop
 * (a thread that was merely descheduled has its messages handed over by then); a peer that
 * never pauses within CLOSE_WAIT_MS is cut off without the close frame.
 */
function closeWhenQuiet(
  socket: WebSocket,
  messagesSeen: () => { count: number; lastAt: number },
  close: { code: number; reason: string },
): void {
  const decidedAt = performance.now();
  const attempt = () => {
    if (socket.readyState !== WebSocket.OPEN) return;
    const before = messagesSeen();
    const overdue = performance.now() - decidedAt >= CLOSE_WAIT_MS;
    if (performance.now() - before.lastAt < QUIET_MS && !overdue) {
      setTimeout(attempt, QUIET_MS);
      return;
    }
    setTimeout(() => {
      if (socket.readyState !== WebSocket.OPEN) return;
      if (messagesSeen().count !== before.count && !overdue) setTimeout(attempt, QUIET_MS);
      else socket.close(close.code, close.reason);
    }, 0);
  };
  setTimeout(attempt, 0);
}

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
    const release = driver.bursts.reserve(owner);
    let upgraded: ReturnType<typeof Deno.upgradeWebSocket>;
    try {
      upgraded = Deno.upgradeWebSocket(c.req.raw, { idleTimeout: options.idleTimeoutSeconds });
    } catch (error) {
      release();
      // Deno refuses a request that is not a WebSocket handshake (no Connection: Upgrade,
      // no key) with a TypeError: the client's request, not a bug.
      if (error instanceof TypeError) {
        throw invalid(`a burst is a WebSocket: the handshake is incomplete (${error.message})`);
      }
      throw error;
    }
    const { response, socket } = upgraded;
    socket.binaryType = "arraybuffer";
    let session: BurstSession | undefined;
    const messages = { count: 0, lastAt: 0 };
    const end = () => {
      if (session) driver.bursts.end(session);
      release();
    };
    socket.onopen = () => {
      session = driver.bursts.open(owner, id, {
        sendBinary: (bytes) => socket.send(bytes),
        sendText: (text) => socket.send(text),
        close: (code, reason) => {
          // The burst ignores everything once it decides to close, so it is released now,
          // whatever the peer does with the closing handshake.
          end();
          closeWhenQuiet(socket, () => ({ ...messages }), { code, reason });
        },
        bufferedAmount: () => socket.bufferedAmount,
      }, options.burst);
    };
    socket.onmessage = (event) => {
      messages.count++;
      messages.lastAt = performance.now();
      const data = event.data;
      session?.receive(typeof data === "string" ? data : new Uint8Array(data as ArrayBuffer));
    };
    socket.onclose = end;
    socket.onerror = end;
    return response;
  });
}
