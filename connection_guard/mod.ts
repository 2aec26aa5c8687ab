/**
 * Header-read and idle timeouts for HTTP connections, which `Deno.serve` (2.9) does not have:
 * it keeps a connection that never completes its request head, or sits idle after a
 * response, open forever (slowloris). The guard watches the server's own connections rather
 * than standing in front of them (no proxy hop: a forwarding thread cost each request two
 * thread wake-ups, about 0.2 ms on this project's virtual machines). Every `lookMs` it lists
 * the TCP connections on the server's port through libc (./sockets.ts: what the kernel has
 * received on each and when), joins them with what the handler saw (requests begun and ended,
 * by client address), and shuts down a connection
 * - whose first request head is not complete `headerMs` after its first bytes were seen, or
 *   that has sent nothing for the longer of `headerMs` and `idleMs` since it was set up
 *   (clients open connections ahead of their requests: one cut as it is taken up fails its
 *   request);
 * - that has no request in flight and none ended in the last `idleMs` (this also bounds
 *   the time a kept-alive connection may take to send its next request head);
 * never once it is a WebSocket (101), whose liveness is the ping/pong of the burst.
 * A request whose head arrived is not timed here: executions have their own deadlines.
 * Timeouts pass late by at most the time between looks (`lookMs`, longer where thousands of
 * connections make a look take milliseconds), never early.
 *
 * The guard also sees a client leave: its end of the connection closing while a request is
 * in flight (as nginx takes it). Deno.serve's own `request.signal` says so only for small
 * requests; {@link clientLeft} gives handlers the guard's word too.
 */
import {
  addressBytes,
  addressKey,
  type Connection,
  openSockets,
  peerKey,
  type Sockets,
} from "./sockets.ts";

/** Timeouts in milliseconds; 0 disables one. */
export interface ConnectionTimeouts {
  headerMs: number;
  idleMs: number;
}

/** What the handler saw of one connection's requests. */
interface Requests {
  inFlight: number;
  /** When the last request ended (`performance.now()`). */
  lastEnded: number;
  /** A response was a WebSocket upgrade (101): never timed out again. */
  upgraded: boolean;
  /** The client's end closed while a request was in flight. */
  clientEnded: boolean;
  leaving?: AbortController;
}

/** What the guard's looks saw of one connection. */
interface Seen {
  fd: number;
  /** The first look that saw bytes from it before any request began. */
  firstBytesAt?: number;
}

/**
 * Where the guard leaves its word on a request's `Deno.ServeHandlerInfo` (which reaches Hono's
 * handlers as `c.env`): a property of that per-request object, where a WeakMap keyed by the
 * request cost about a tenth of a tiny execution's throughput (every entry is an ephemeron
 * the garbage collector must trace).
 */
const GUARDED = Symbol("connection guard");

interface GuardedInfo {
  [GUARDED]?: { guard: Guard; peer: string };
}

/**
 * Aborted when the client of `request` leaves: its own signal, or the guard's, which sees the
 * client's end of the connection close (a request that did not pass the guard: its own).
 * `info` is the request's `Deno.ServeHandlerInfo` (Hono's `c.env`).
 */
export function clientLeft(request: Request, info: unknown): AbortSignal {
  const g = (info as GuardedInfo | undefined)?.[GUARDED];
  return g ? AbortSignal.any([request.signal, g.guard.leaving(g.peer)]) : request.signal;
}

/**
 * A serving handler's answer handed back as it is (no awaited layer of its own: half a
 * microsecond of a small request under load), `settled` told of its response once there is
 * one, or of none when it failed.
 */
export function watchAnswer(
  answer: () => Response | Promise<Response>,
  settled: (response?: Response) => void,
): Response | Promise<Response> {
  let result: Response | Promise<Response>;
  try {
    result = answer();
  } catch (error) {
    settled();
    throw error;
  }
  if (result instanceof Promise) result.then(settled, () => settled());
  else settled(result);
  return result;
}

/** The guard of one `Deno.serve` server's connections. */
export interface ConnectionGuard {
  /** Wraps the server's handler so the guard sees requests begin and end. */
  handler(inner: Deno.ServeHandler<Deno.NetAddr>): Deno.ServeHandler<Deno.NetAddr>;
  /** Starts looking at the connections on the server's `port`. */
  watch(port: number): void;
  /** Shuts down every connection still open on the port. */
  cut(): void;
  /** Stops looking. */
  stop(): void;
}

class Guard implements ConnectionGuard {
  readonly #sockets: Sockets;
  readonly #timeouts: ConnectionTimeouts;
  readonly #lookMs: number;
  /** By client address ({@link peerKey}). */
  readonly #requests = new Map<string, Requests>();
  readonly #seen = new Map<string, Seen>();
  /** Deno's text form of a client address -> its {@link addressKey}. */
  readonly #addresses = new Map<string, string>();
  /**
   * The requests of a connection by Deno's text form of its client's address and its port:
   * found without building the peer's key each request. Emptied whenever `#requests` lets go
   * of one, so it never holds a connection's record the guard no longer keeps.
   */
  readonly #recent = new Map<string, Map<number, { peer: string; requests: Requests }>>();
  #port = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  constructor(sockets: Sockets, timeouts: ConnectionTimeouts) {
    this.#sockets = sockets;
    this.#timeouts = timeouts;
    const shortest = Math.min(...[timeouts.headerMs, timeouts.idleMs].filter((ms) => ms > 0));
    this.#lookMs = Math.min(250, Math.max(20, shortest / 8));
  }

  #peer(addr: Deno.NetAddr): string {
    let address = this.#addresses.get(addr.hostname);
    if (address === undefined) {
      if (this.#addresses.size >= 4096) this.#addresses.clear();
      this.#addresses.set(addr.hostname, address = addressKey(addressBytes(addr.hostname)));
    }
    return peerKey(address, addr.port);
  }

  #requestsOf(peer: string): Requests {
    let requests = this.#requests.get(peer);
    if (!requests) {
      requests = { inFlight: 0, lastEnded: 0, upgraded: false, clientEnded: false };
      this.#requests.set(peer, requests);
    }
    return requests;
  }

  /** The peer key and request record of the connection from `addr`. */
  #connectionOf(addr: Deno.NetAddr): { peer: string; requests: Requests } {
    let ports = this.#recent.get(addr.hostname);
    if (!ports) {
      if (this.#recent.size >= 4096) this.#recent.clear();
      this.#recent.set(addr.hostname, ports = new Map());
    }
    let connection = ports.get(addr.port);
    if (!connection) {
      const peer = this.#peer(addr);
      ports.set(addr.port, connection = { peer, requests: this.#requestsOf(peer) });
    }
    return connection;
  }

  handler(inner: Deno.ServeHandler<Deno.NetAddr>): Deno.ServeHandler<Deno.NetAddr> {
    return (request, info) => {
      const { peer, requests: of } = this.#connectionOf(info.remoteAddr);
      of.inFlight++;
      (info as GuardedInfo)[GUARDED] = { guard: this, peer };
      const ended = () => {
        of.inFlight--;
        of.lastEnded = performance.now();
      };
      return watchAnswer(() => inner(request, info), (response) => {
        if (response !== undefined && response.status !== 101) {
          info.completed.then(ended, ended);
          return;
        }
        // A failed request ends now; a WebSocket (101) is never timed out again.
        if (response !== undefined) of.upgraded = true;
        ended();
      });
    };
  }

  /** Aborted once the client of the connection `peer` has left. */
  leaving(peer: string): AbortSignal {
    const requests = this.#requests.get(peer);
    if (!requests || requests.clientEnded) return AbortSignal.abort();
    requests.leaving ??= new AbortController();
    return requests.leaving.signal;
  }

  watch(port: number): void {
    this.#port = port;
    this.#next(this.#lookMs);
  }

  /**
   * Looks again after `ms`, or later where looks take long (thousands of connections: 8 ms
   * for 2,000 here), so that they take at most a hundredth of the thread.
   */
  #next(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      const started = performance.now();
      this.#look();
      this.#next(Math.max(this.#lookMs, 100 * (performance.now() - started)));
    }, ms);
    Deno.unrefTimer(this.#timer);
  }

  #look(): void {
    const now = performance.now();
    const open = new Set<string>();
    for (const connection of this.#sockets.connections(this.#port)) {
      open.add(connection.peer);
      let seen = this.#seen.get(connection.peer);
      if (seen?.fd !== connection.fd) this.#seen.set(connection.peer, seen = { fd: connection.fd });
      const requests = this.#requests.get(connection.peer);
      if (!requests && connection.bytesReceived > 0) seen.firstBytesAt ??= now;
      if (connection.clientEnded && requests?.inFlight) this.#left(requests);
      if (this.#expired(connection, seen, requests, now)) this.#sockets.shutDown(connection);
    }
    for (const peer of this.#seen.keys()) if (!open.has(peer)) this.#seen.delete(peer);
    for (const [peer, requests] of this.#requests) {
      if (open.has(peer)) continue;
      // Its connection closed: a request still in flight lost its client.
      if (requests.inFlight > 0) this.#left(requests);
      else {
        this.#requests.delete(peer);
        this.#recent.clear();
      }
    }
  }

  #left(requests: Requests): void {
    requests.clientEnded = true;
    requests.leaving?.abort();
  }

  #expired(
    connection: Connection,
    seen: Seen,
    requests: Requests | undefined,
    now: number,
  ): boolean {
    const { headerMs, idleMs } = this.#timeouts;
    if (requests?.upgraded || requests?.inFlight) return false;
    if (requests) return idleMs > 0 && now - requests.lastEnded >= idleMs;
    if (connection.bytesReceived === 0) {
      // Idle, not slow: it may wait the longer of the two.
      const limit = Math.max(headerMs, idleMs);
      return connection.msSinceReceived >= limit;
    }
    return headerMs > 0 && now - (seen.firstBytesAt ?? now) >= headerMs;
  }

  cut(): void {
    for (const connection of this.#sockets.connections(this.#port)) {
      this.#sockets.shutDown(connection);
    }
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * A guard for a server with these timeouts, or why there cannot be one here (not Linux, or
 * libc not reachable through FFI).
 */
export function guardConnections(timeouts: ConnectionTimeouts): ConnectionGuard | string {
  const sockets = openSockets();
  return typeof sockets === "string" ? sockets : new Guard(sockets, timeouts);
}
