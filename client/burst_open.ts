/**
 * Opening a burst: the WebSocket URL with the client's API key, the choice of socket, and a
 * refused upgrade turned into the NnapiError the service meant (NOT_FOUND, UNAUTHORIZED),
 * so `compilation.burst()` fails like any other call of the SDK.
 */
import { Burst } from "./burst.ts";
import {
  type BurstSocket,
  denoSocket,
  hasDenoSockets,
  standardSocket,
  UpgradeRefused,
} from "./burst_socket.ts";
import type { ExecutionTarget } from "./execution.ts";
import { NnapiError, readErrorBody, type Transport } from "./http.ts";
import type { ErrorStatus } from "./types.ts";

/** Options of opening a burst. */
export interface BurstOpenOptions {
  /** The API key, sent as `?access_token=` (WebSockets cannot carry headers). */
  apiKey?: string;
  /**
   * Called with errors the service reports outside any request (a frame whose request id
   * was unreadable, a control message it rejected).
   */
  onError?: (error: NnapiError) => void;
  /**
   * The socket: `"websocket"`, the standard WebSocket; `"deno"`, the SDK's WebSocket client
   * over `Deno.connect` with TCP_NODELAY (client/burst_socket.ts explains why); `"auto"`
   * (default) picks `"deno"` where `Deno.connect` exists.
   */
  socket?: "auto" | "websocket" | "deno";
}

/** API keys of SDK transports, for burst URLs (the transport keeps its key private). */
const API_KEYS = new WeakMap<Transport, string>();

/** Remembers the API key a transport authenticates with, for the bursts opened through it. */
export function rememberApiKey(transport: Transport, apiKey: string | undefined): void {
  if (apiKey !== undefined) API_KEYS.set(transport, apiKey);
}

/** The status of a refused upgrade whose body names none. */
function statusOfRefusal(httpStatus: number): ErrorStatus {
  if (httpStatus === 401 || httpStatus === 403) return "UNAUTHORIZED";
  if (httpStatus === 404) return "NOT_FOUND";
  return httpStatus >= 400 && httpStatus < 500 ? "INVALID_ARGUMENT" : "GENERAL_FAILURE";
}

/** The NNAPI status of a refused upgrade: the error body's, else the HTTP status's. */
function refusal(path: string, refused: UpgradeRefused): NnapiError {
  const { body, status, message } = readErrorBody(refused.body);
  const http = refused.httpStatus;
  return new NnapiError(
    status ?? statusOfRefusal(http),
    http,
    message ?? `GET ${path}: the WebSocket upgrade was refused with HTTP ${http}`,
    { body },
  );
}

/**
 * Opens a burst on a compilation: the WebSocket at `GET /v1/compilations/{id}/burst`,
 * resolved once the service said `ready`. A refused upgrade throws NnapiError with the
 * service's status (NOT_FOUND, UNAUTHORIZED); with the standard WebSocket, which does not
 * tell why, the same URL is requested over HTTP to find out.
 */
export async function openBurst(
  transport: Transport,
  compilation: ExecutionTarget,
  options: BurstOpenOptions = {},
): Promise<Burst> {
  const path = `/v1/compilations/${encodeURIComponent(compilation.id)}/burst`;
  const url = new URL(`${transport.baseUrl}${path}`);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  const apiKey = options.apiKey ?? API_KEYS.get(transport);
  if (apiKey !== undefined) url.searchParams.set("access_token", apiKey);
  const choice = options.socket ?? "auto";
  const native = choice === "deno" || (choice === "auto" && hasDenoSockets());
  let socket: BurstSocket;
  try {
    socket = native ? await denoSocket(url) : standardSocket(url);
  } catch (error) {
    if (error instanceof UpgradeRefused) throw refusal(path, error);
    throw new NnapiError(
      "DEVICE_UNAVAILABLE",
      0,
      `cannot open a burst at ${transport.baseUrl}${path}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const burst = new Burst(socket, compilation, options);
  try {
    return await burst.ready();
  } catch (error) {
    if (native) throw error;
    const response = await transport.send("GET", path).catch((e: unknown) => e);
    if (response instanceof Response) await response.body?.cancel();
    if (
      response instanceof NnapiError &&
      !(response.status === "INVALID_ARGUMENT" && response.httpStatus === 400)
    ) {
      throw response;
    }
    throw error;
  }
}
