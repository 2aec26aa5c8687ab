/**
 * Header-read and idle timeouts for HTTP connections, which `Deno.serve` (2.9) does not have:
 * it keeps a connection that never completes its request head, or sits idle after a
 * response, open forever (slowloris). Its per-connection variant (the internal
 * `serveHttpOnConnection`) could close connections but breaks WebSocket upgrades, so the
 * guard sits in front instead: it accepts the public TCP connections and forwards the bytes
 * of each, unparsed, over loopback to a private `Deno.serve`. It learns where requests start
 * and end from the handler itself (the private server sees each forwarded connection's
 * loopback port), and closes a connection
 * - whose first request head has not arrived `headerMs` after it was accepted;
 * - that has no request in flight and has sent nothing back for `idleMs` (this also bounds
 *   the time a kept-alive connection may take to send its next request head);
 * never once it is a WebSocket (101), whose liveness is the ping/pong of the burst.
 * A request whose head arrived is not timed here: executions have their own deadlines.
 *
 * The guard also sees a client leave: its end of the connection closing while a request is
 * in flight (as nginx takes it). Deno.serve's own `request.signal` says so only for small
 * requests; {@link clientLeft} gives handlers the guard's word too.
 */

/** Per request the guard forwarded, aborted when its client's end of the connection closes. */
const leaving = new WeakMap<Request, AbortSignal>();

/**
 * Aborted when the client of `request` leaves: its own signal, or the guard's, which sees the
 * client's end of the connection close (a request that did not pass the guard: its own).
 */
export function clientLeft(request: Request): AbortSignal {
  const guard = leaving.get(request);
  return guard ? AbortSignal.any([request.signal, guard]) : request.signal;
}

/** Timeouts in milliseconds; 0 disables one. */
export interface ConnectionTimeouts {
  headerMs: number;
  idleMs: number;
}

/** A guarded listener in front of a private server. */
export interface ConnectionGuard {
  /** The public address. */
  readonly addr: Deno.NetAddr;
  /** Wraps the private server's handler so the guard sees requests begin and end. */
  handler(inner: Deno.ServeHandler<Deno.NetAddr>): Deno.ServeHandler<Deno.NetAddr>;
  /** Starts accepting, forwarding to the private server's loopback port. */
  start(upstreamPort: number): void;
  /** Stops accepting (already accepted connections stay). */
  stopAccepting(): Promise<void>;
  /**
   * Closes every connection and timer, after letting forwarded answers drain (until the
   * private server has ended each connection, at most `graceMs`).
   */
  closeAll(graceMs?: number): Promise<void>;
}

/** After the private server ends a connection, how long the client may still read. */
const LINGER_MS = 2_000;
/** Forwarding buffers start small (idle connections are cheap) and grow with traffic. */
const FIRST_BUFFER = 8 * 1024;
const LARGEST_BUFFER = 256 * 1024;

/** One forwarded connection and its timer. */
class Forwarded {
  readonly client: Deno.TcpConn;
  upstream: Deno.TcpConn | undefined;
  /** The upstream connection's local port: how the private server's handler finds it. */
  upstreamPort = 0;
  /** The private server has ended the connection; what it sent is being passed on. */
  upstreamDone = false;
  inFlight = 0;
  upgraded = false;
  closed = false;
  /** True while a response chunk is being written to the client (it is not idle). */
  sending = false;
  /** Aborted when the client's end of the connection closes (it sends nothing more). */
  readonly clientEnded = new AbortController();
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #onClose: (self: Forwarded) => void;

  constructor(client: Deno.TcpConn, onClose: (self: Forwarded) => void) {
    this.client = client;
    this.#onClose = onClose;
  }

  arm(ms: number, check: () => boolean = () => true): void {
    this.disarm();
    if (ms <= 0 || this.closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (check()) this.close();
      else this.arm(ms, check);
    }, ms);
  }

  disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.disarm();
    for (const conn of [this.client, this.upstream]) {
      try {
        conn?.close();
      } catch {
        // already closed
      }
    }
    this.#onClose(this);
  }
}

/** Copies `from` to `to` until EOF; true when it ended by EOF (not by an error). */
async function pump(
  from: Deno.TcpConn,
  to: Deno.TcpConn,
  onWrite?: (writing: boolean) => void,
): Promise<boolean> {
  let buffer = new Uint8Array(FIRST_BUFFER);
  try {
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) return true;
      onWrite?.(true);
      for (let off = 0; off < n;) off += await to.write(buffer.subarray(off, n));
      onWrite?.(false);
      if (n === buffer.length && buffer.length < LARGEST_BUFFER) {
        buffer = new Uint8Array(buffer.length * 2);
      }
    }
  } catch {
    return false;
  }
}

/** Listens on the public address; throws as `Deno.listen` does (e.g. AddrInUse). */
export function guardConnections(
  listen: { hostname: string; port: number },
  timeouts: ConnectionTimeouts,
): ConnectionGuard {
  const listener = Deno.listen({ hostname: listen.hostname, port: listen.port });
  const open = new Set<Forwarded>();
  const byUpstreamPort = new Map<number, Forwarded>();
  let accepting: Promise<void> | undefined;
  let stopping = false;

  const forget = (f: Forwarded) => {
    open.delete(f);
    byUpstreamPort.delete(f.upstreamPort);
  };
  const idle = (f: Forwarded) => () => f.inFlight === 0 && !f.upgraded && !f.sending;

  async function forward(client: Deno.TcpConn, upstreamPort: number): Promise<void> {
    const f = new Forwarded(client, forget);
    open.add(f);
    f.arm(timeouts.headerMs, idle(f));
    try {
      f.upstream = await Deno.connect({ hostname: "127.0.0.1", port: upstreamPort });
      client.setNoDelay(true);
      f.upstream.setNoDelay(true);
    } catch {
      f.close();
      return;
    }
    if (f.closed) { // the header timeout passed while connecting
      f.upstream.close();
      return;
    }
    const upstream = f.upstream;
    f.upstreamPort = upstream.localAddr.port;
    byUpstreamPort.set(f.upstreamPort, f);
    const toServer = pump(client, upstream).then(async (eof) => {
      f.clientEnded.abort();
      if (!eof) return f.close();
      // The client is done sending; the server may still answer.
      await upstream.closeWrite().catch(() => f.close());
    });
    const toClient = pump(upstream, client, (writing) => f.sending = writing).then(
      async (eof) => {
        if (!eof) return f.close();
        // The server ended the connection: pass the end on, give the client a moment to
        // read what is left, then close.
        f.upstreamDone = true;
        f.upgraded = false;
        f.arm(LINGER_MS);
        await client.closeWrite().catch(() => f.close());
      },
    );
    await Promise.all([toServer, toClient]);
    f.close();
  }

  return {
    addr: listener.addr,
    handler(inner) {
      return async (request, info) => {
        const f = byUpstreamPort.get(info.remoteAddr.port);
        if (!f) return await inner(request, info);
        f.inFlight++;
        f.disarm();
        leaving.set(request, f.clientEnded.signal);
        const ended = () => {
          f.inFlight--;
          if (f.inFlight === 0 && !f.upgraded && !f.closed) f.arm(timeouts.idleMs, idle(f));
        };
        let response: Response;
        try {
          response = await inner(request, info);
        } catch (error) {
          ended();
          throw error;
        }
        if (response.status === 101) {
          f.upgraded = true;
          ended();
        } else {
          info.completed.then(ended, ended);
        }
        return response;
      };
    },
    start(upstreamPort) {
      accepting = (async () => {
        while (!stopping) {
          let client: Deno.TcpConn;
          try {
            client = await listener.accept();
          } catch (error) {
            if (stopping || error instanceof Deno.errors.BadResource) return;
            // Out of descriptors and the like: say so once per failure, then keep serving.
            console.error(`nnserve: cannot accept a connection: ${(error as Error).message}`);
            await new Promise((resolve) => setTimeout(resolve, 100));
            continue;
          }
          forward(client, upstreamPort).catch(() => {}); // forward closes what it opened
        }
      })();
    },
    async stopAccepting() {
      stopping = true;
      try {
        listener.close();
      } catch {
        // already closed
      }
      await accepting;
    },
    async closeAll(graceMs = 500) {
      const deadline = Date.now() + graceMs;
      while ([...open].some((f) => !f.upstreamDone) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      for (const f of [...open]) f.close();
    },
  };
}
