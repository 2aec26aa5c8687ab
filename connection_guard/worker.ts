/// <reference lib="deno.worker" />
/**
 * The connection guard's own thread: it accepts the public TCP connections, forwards the
 * bytes of each, unparsed, over loopback to the private server, and closes connections
 * whose timeouts pass. It learns where requests begin and end from the shared rows the
 * server's handler writes ({@link Field}), so forwarding costs the server's thread nothing.
 */
import { at, Field, type FromWorker, since, type Slots, tick, type ToWorker } from "./slots.ts";

/** After the private server ends a connection, how long the client may still read. */
const LINGER_MS = 2_000;
/** Forwarding buffers start small (idle connections are cheap) and grow with traffic. */
const FIRST_BUFFER = 8 * 1024;
const LARGEST_BUFFER = 256 * 1024;

let slots: Slots;
let rows: Int32Array;
let headerMs = 0;
let idleMs = 0;
let listener: Deno.TcpListener | undefined;
let accepting: Promise<void> | undefined;
let stopping = false;
let generations = 0;
const open = new Set<Forwarded>();

function post(message: FromWorker): void {
  self.postMessage(message);
}

/** One forwarded connection and its timer. */
class Forwarded {
  readonly client: Deno.TcpConn;
  upstream: Deno.TcpConn | undefined;
  /** The upstream connection's local port: the row the private server's handler writes. */
  port = 0;
  generation = 0;
  readonly acceptedAt = tick(slots);
  /** When the client sent its first bytes (its first request head began). */
  firstBytesAt: number | undefined;
  /** The private server has ended the connection; what it sent is being passed on. */
  upstreamDone = false;
  closed = false;
  /** True while a response chunk is being written to the client (it is not idle). */
  sending = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(client: Deno.TcpConn) {
    this.client = client;
  }

  field(field: number): number {
    return this.port === 0 ? 0 : Atomics.load(rows, at(this.port, field));
  }

  /** Claims the row of the upstream connection's port for this connection. */
  claim(port: number): void {
    this.port = port;
    this.generation = (generations = (generations + 1) | 0) || (generations = 1);
    for (const field of [Field.inFlight, Field.started, Field.upgraded, Field.clientEnded]) {
      Atomics.store(rows, at(port, field), 0);
    }
    Atomics.store(rows, at(port, Field.lastEnded), tick(slots));
    Atomics.store(rows, at(port, Field.generation), this.generation);
  }

  /**
   * Arms the timer for the next moment a timeout could pass: the header timeout from the
   * first bytes until the first request head has arrived, then the idle timeout after each
   * request; none once upgraded. A connection that has sent nothing yet is idle, not slow:
   * it may wait the longer of the two (clients open connections ahead of their requests,
   * and one cut as it is taken up fails that request).
   */
  watch(): void {
    this.#disarm();
    if (this.closed || this.upstreamDone || this.field(Field.upgraded)) return;
    let wait = Infinity;
    if (!this.field(Field.started)) {
      const limit = this.firstBytesAt === undefined ? Math.max(headerMs, idleMs) : headerMs;
      if (limit > 0) {
        wait = limit - since(slots, this.firstBytesAt ?? this.acceptedAt);
        if (wait <= 0) return this.close();
      }
      // Looks again within the idle timeout, to time the first request's end from there.
      if (idleMs > 0) wait = Math.min(wait, idleMs);
    } else if (idleMs > 0) {
      if (this.field(Field.inFlight) > 0 || this.sending) wait = idleMs;
      else {
        wait = idleMs - since(slots, this.field(Field.lastEnded));
        if (wait <= 0) return this.close();
      }
    }
    if (wait === Infinity) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.watch();
    }, wait);
  }

  linger(): void {
    this.#disarm();
    this.#timer = setTimeout(() => this.close(), LINGER_MS);
  }

  #disarm(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The client's end closed: handlers waiting on it are told. */
  clientEnded(): void {
    if (this.port === 0 || this.field(Field.generation) !== this.generation) return;
    Atomics.store(rows, at(this.port, Field.clientEnded), 1);
    post({ type: "clientEnded", port: this.port, generation: this.generation });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.#disarm();
    for (const conn of [this.client, this.upstream]) {
      try {
        conn?.close();
      } catch {
        // already closed
      }
    }
    this.clientEnded();
    if (this.port !== 0) {
      Atomics.compareExchange(rows, at(this.port, Field.generation), this.generation, 0);
    }
    open.delete(this);
  }
}

/**
 * Copies `from` to `to` until EOF; true when it ended by EOF (not by an error). `onWrite` is
 * told when a write begins (true) and ends (false).
 */
async function pump(
  from: Deno.TcpConn,
  to: Deno.TcpConn,
  onWrite: (writing: boolean) => void,
): Promise<boolean> {
  let buffer = new Uint8Array(FIRST_BUFFER);
  try {
    for (;;) {
      const n = await from.read(buffer);
      if (n === null) return true;
      onWrite(true);
      for (let off = 0; off < n;) off += await to.write(buffer.subarray(off, n));
      onWrite(false);
      if (n === buffer.length && buffer.length < LARGEST_BUFFER) {
        buffer = new Uint8Array(buffer.length * 2);
      }
    }
  } catch {
    return false;
  }
}

async function forward(client: Deno.TcpConn, upstreamPort: number): Promise<void> {
  const f = new Forwarded(client);
  open.add(f);
  f.watch();
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
  f.claim(upstream.localAddr.port);
  const toServer = pump(client, upstream, () => {
    if (f.firstBytesAt !== undefined) return;
    f.firstBytesAt = tick(slots);
    f.watch(); // the header timeout now runs
  }).then(async (eof) => {
    f.clientEnded();
    if (!eof) return f.close();
    // The client is done sending; the server may still answer.
    await upstream.closeWrite().catch(() => f.close());
  });
  const toClient = pump(upstream, client, (writing) => f.sending = writing).then(
    async (eof) => {
      if (!eof) return f.close();
      // The server ended the connection: pass the end on, give the client a moment to read
      // what is left, then close.
      f.upstreamDone = true;
      f.linger();
      await client.closeWrite().catch(() => f.close());
    },
  );
  await Promise.all([toServer, toClient]);
  f.close();
}

function start(upstreamPort: number): void {
  accepting = (async () => {
    while (!stopping) {
      let client: Deno.TcpConn;
      try {
        client = await listener!.accept();
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
}

async function stopAccepting(): Promise<void> {
  stopping = true;
  try {
    listener?.close();
  } catch {
    // already closed
  }
  await accepting;
}

async function closeAll(graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  while ([...open].some((f) => !f.upstreamDone) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (const f of [...open]) f.close();
}

self.onmessage = async (event: MessageEvent<ToWorker>) => {
  const message = event.data;
  switch (message.type) {
    case "listen":
      ({ slots, headerMs, idleMs } = message);
      rows = new Int32Array(slots.buffer);
      try {
        listener = Deno.listen({ hostname: message.hostname, port: message.port });
      } catch (error) {
        const { name, message: text } = error as Error;
        return post({ type: "listenFailed", name, message: text });
      }
      return post({ type: "listening", ...listener.addr });
    case "start":
      return start(message.upstreamPort);
    case "stopAccepting":
      await stopAccepting();
      return post({ type: "done", of: "stopAccepting" });
    case "closeAll":
      await closeAll(message.graceMs);
      return post({ type: "done", of: "closeAll" });
  }
};
