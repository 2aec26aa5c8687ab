/**
 * Header-read and idle timeouts for HTTP connections, which `Deno.serve` (2.9) does not have:
 * it keeps a connection that never completes its request head, or sits idle after a
 * response, open forever (slowloris). Its per-connection variant (the internal
 * `serveHttpOnConnection`) could close connections but breaks WebSocket upgrades, so the
 * guard sits in front instead: a worker of its own (./worker.ts) accepts the public TCP
 * connections and forwards the bytes of each, unparsed, over loopback to a private
 * `Deno.serve`, so forwarding takes nothing from the server's thread. It learns where requests
 * start and end from the handler itself (the private server sees each forwarded connection's
 * loopback port, and writes the port's row of shared memory, ./slots.ts), and closes a
 * connection
 * - whose first request head is not complete `headerMs` after its first byte arrived, or
 *   that has sent nothing for the longer of `headerMs` and `idleMs` since it was accepted
 *   (clients open connections ahead of their requests: one cut as it is taken up fails its
 *   request);
 * - that has no request in flight and has sent nothing back for `idleMs` (this also bounds
 *   the time a kept-alive connection may take to send its next request head);
 * never once it is a WebSocket (101), whose liveness is the ping/pong of the burst.
 * A request whose head arrived is not timed here: executions have their own deadlines.
 *
 * The guard also sees a client leave: its end of the connection closing while a request is
 * in flight (as nginx takes it). Deno.serve's own `request.signal` says so only for small
 * requests; {@link clientLeft} gives handlers the guard's word too.
 */
import { at, Field, type FromWorker, newSlots, tick, type ToWorker } from "./slots.ts";

/** A request the guard forwarded: the row of its connection, and the guard that has it. */
interface Forwarded {
  guard: Guard;
  port: number;
  generation: number;
}

const forwarded = new WeakMap<Request, Forwarded>();

/**
 * Aborted when the client of `request` leaves: its own signal, or the guard's, which sees the
 * client's end of the connection close (a request that did not pass the guard: its own).
 */
export function clientLeft(request: Request): AbortSignal {
  const f = forwarded.get(request);
  return f ? AbortSignal.any([request.signal, f.guard.clientEnded(f)]) : request.signal;
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
   * private server has ended each connection, at most `graceMs`), and ends the worker.
   */
  closeAll(graceMs?: number): Promise<void>;
}

class Guard implements ConnectionGuard {
  addr!: Deno.NetAddr;
  readonly #worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
  readonly #slots = newSlots();
  readonly #rows = new Int32Array(this.#slots.buffer);
  /** Per connection a handler asked about (`port:generation`): aborted when its client leaves. */
  readonly #leaving = new Map<string, AbortController>();
  /** Who waits for the worker's answer, per kind of question (answered in order per kind). */
  readonly #replies: Record<ToWorker["type"], ((message: FromWorker) => void)[]> = {
    listen: [],
    start: [],
    stopAccepting: [],
    closeAll: [],
  };
  #ended = false;

  constructor() {
    // The guard holds the public listener: a service without it answers nothing, so it
    // stops, saying why, for its supervisor to start it again.
    this.#worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      console.error(`nnserve: the connection guard failed: ${event.message}; exiting`);
      Deno.exit(1);
    };
    this.#worker.onmessage = (event: MessageEvent<FromWorker>) => {
      const message = event.data;
      if (message.type === "clientEnded") {
        const key = `${message.port}:${message.generation}`;
        this.#leaving.get(key)?.abort();
        this.#leaving.delete(key);
      } else {
        this.#replies[message.type === "done" ? message.of : "listen"].shift()?.(message);
      }
    };
  }

  /** Sends `message` and waits for the worker's answer (answers come in order). */
  #ask(message: ToWorker): Promise<FromWorker> {
    if (this.#ended) return Promise.resolve({ type: "done", of: "closeAll" });
    return new Promise((resolve) => {
      this.#replies[message.type].push(resolve);
      this.#worker.postMessage(message);
    });
  }

  async listen(listen: { hostname: string; port: number }, timeouts: ConnectionTimeouts) {
    const answer = await this.#ask({ type: "listen", ...listen, ...timeouts, slots: this.#slots });
    if (answer.type === "listenFailed") {
      this.#end();
      const errors = Deno.errors as unknown as Record<string, new (message: string) => Error>;
      throw new (errors[answer.name] ?? Error)(answer.message);
    }
    if (answer.type !== "listening") throw new Error(`connection guard: ${answer.type}`);
    this.addr = { transport: "tcp", hostname: answer.hostname, port: answer.port };
  }

  clientEnded(f: Forwarded): AbortSignal {
    const rows = this.#rows;
    if (
      Atomics.load(rows, at(f.port, Field.generation)) !== f.generation ||
      Atomics.load(rows, at(f.port, Field.clientEnded))
    ) return AbortSignal.abort();
    const key = `${f.port}:${f.generation}`;
    let controller = this.#leaving.get(key);
    if (!controller) this.#leaving.set(key, controller = new AbortController());
    return controller.signal;
  }

  handler(inner: Deno.ServeHandler<Deno.NetAddr>): Deno.ServeHandler<Deno.NetAddr> {
    const rows = this.#rows;
    return async (request, info) => {
      const port = info.remoteAddr.port;
      const generation = Atomics.load(rows, at(port, Field.generation));
      if (generation === 0) return await inner(request, info); // not through the guard
      Atomics.add(rows, at(port, Field.inFlight), 1);
      Atomics.store(rows, at(port, Field.started), 1);
      forwarded.set(request, { guard: this, port, generation });
      const ended = () => {
        if (Atomics.load(rows, at(port, Field.generation)) !== generation) return;
        Atomics.store(rows, at(port, Field.lastEnded), tick(this.#slots));
        Atomics.sub(rows, at(port, Field.inFlight), 1);
      };
      let response: Response;
      try {
        response = await inner(request, info);
      } catch (error) {
        ended();
        throw error;
      }
      if (response.status === 101) {
        Atomics.store(rows, at(port, Field.upgraded), 1);
        ended();
      } else {
        info.completed.then(ended, ended);
      }
      return response;
    };
  }

  start(upstreamPort: number): void {
    this.#worker.postMessage({ type: "start", upstreamPort } satisfies ToWorker);
  }

  async stopAccepting(): Promise<void> {
    await this.#ask({ type: "stopAccepting" });
  }

  async closeAll(graceMs = 500): Promise<void> {
    await this.#ask({ type: "closeAll", graceMs });
    if (!this.#ended) this.#end();
  }

  #end(): void {
    this.#ended = true;
    this.#worker.terminate();
    // Whatever else waited on the worker has nothing left to wait for.
    for (const waiting of Object.values(this.#replies)) {
      for (const reply of waiting.splice(0)) reply({ type: "done", of: "closeAll" });
    }
    for (const controller of this.#leaving.values()) controller.abort();
    this.#leaving.clear();
  }
}

/** Listens on the public address in the guard's worker; throws as `Deno.listen` does. */
export async function guardConnections(
  listen: { hostname: string; port: number },
  timeouts: ConnectionTimeouts,
): Promise<ConnectionGuard> {
  const guard = new Guard();
  await guard.listen(listen, timeouts);
  return guard;
}
