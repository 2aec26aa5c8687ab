/**
 * The burst server's polling window (NNAPI's `debug.nn.burst-server-polling-window`): after
 * answering a burst request, the server polls for the next one for a while before it
 * sleeps. Here the sleep is the event loop's wait in the kernel, and the wake-up it costs
 * (the thread is scheduled again, on a virtual machine the virtual CPU too) was about 40%
 * of a tiny model's round trip (docs/burst-protocol.md). Polling keeps the event loop
 * turning: each turn writes a byte to a Unix socket pair of its own and reads it back, so
 * the loop's wait returns at once and finds whatever else is ready, the burst's socket
 * included. Every other event is handled as it would be; the cost is the CPU the turns burn,
 * at most one window after each answer, and none while the executors run anything (they
 * need the cores more).
 */

/** Default window: a loopback client's next request came 50-80 µs after a result here. */
export const DEFAULT_BURST_POLLING_WINDOW_US = 200;

/** What a stream (a burst, a gRPC stream) sees of the polling window. */
export interface RequestPolling {
  /** The window, in ms (0: never polls). */
  readonly windowMs: number;
  /** A result went out (at `now`): poll for the window from then (when the executors are idle). */
  hold(now?: number): void;
}

/**
 * One stream's use of the window (a burst, a gRPC ModelStreamInfer stream): it polls after
 * an answer only when its latest request came within the window of the answer before it. A
 * client that takes longer (a camera between frames, a peer across a network) costs no
 * polling after its first slow request.
 */
export class StreamPolling {
  readonly #polling: RequestPolling;
  /** When the latest answer went out (performance.now()). */
  #answeredAt = -Infinity;
  #pollAfterAnswer = false;

  constructor(polling: RequestPolling) {
    this.#polling = polling;
  }

  /** A request arrived (at `now`). */
  received(now = performance.now()): void {
    this.#pollAfterAnswer = now - this.#answeredAt <= this.#polling.windowMs;
  }

  /** An answer went out. */
  answered(): void {
    const now = performance.now();
    this.#answeredAt = now;
    if (this.#pollAfterAnswer) this.#polling.hold(now);
  }
}

/** The process's one polling loop, shared by every burst and stream. */
export class PollingWindow implements RequestPolling {
  readonly windowMs: number;
  readonly #idle: () => boolean;
  readonly #spent: (seconds: number) => void;
  /** performance.now() until which the loop turns. */
  #until = 0;
  #loop?: Promise<void>;
  #pair?: Promise<SocketPair | undefined>;
  #closed = false;

  /**
   * `idle`: whether the loop may burn a core now (no execution is running elsewhere);
   * `spent`: told how long each stretch of polling lasted.
   */
  constructor(
    windowUs: number,
    hooks: { idle: () => boolean; spent: (seconds: number) => void },
  ) {
    this.windowMs = windowUs / 1000;
    this.#idle = hooks.idle;
    this.#spent = hooks.spent;
  }

  hold(now = performance.now()): void {
    if (this.windowMs <= 0 || this.#closed) return;
    this.#until = now + this.windowMs;
    this.#loop ??= this.#turn().catch((error) => {
      // A pair that fails once is not trusted again: the window stays shut.
      console.warn(`nnserve: the burst polling window is off: ${error}`);
      const broken = this.#pair;
      this.#pair = Promise.resolve(undefined);
      return broken?.then((pair) => pair?.close());
    }).finally(() => this.#loop = undefined);
  }

  /** Whether the loop is turning now. */
  get polling(): boolean {
    return this.#loop !== undefined;
  }

  /** Stops the loop and lets go of its sockets; later holds do nothing. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#until = 0;
    await this.#loop;
    (await this.#pair)?.close();
  }

  async #turn(): Promise<void> {
    const pair = await (this.#pair ??= openPair());
    if (!pair) return;
    const started = performance.now();
    try {
      while (!this.#closed && performance.now() < this.#until && this.#idle()) await pair.echo();
    } finally {
      this.#spent((performance.now() - started) / 1000);
    }
  }
}

/** Two ends of a Unix stream socket: a byte written to one is read from the other. */
interface SocketPair {
  echo(): Promise<void>;
  close(): void;
}

/**
 * A connected Unix socket pair (its path is removed once connected), or undefined where
 * none can be made: the window then never polls, and the service says so once.
 */
async function openPair(): Promise<SocketPair | undefined> {
  let dir: string | undefined;
  try {
    dir = await Deno.makeTempDir({ prefix: "nnserve-poll-" });
    const listener = Deno.listen({ transport: "unix", path: `${dir}/poll.sock` });
    const [sender, receiver] = await Promise.all([
      Deno.connect({ transport: "unix", path: `${dir}/poll.sock` }),
      listener.accept(),
    ]);
    listener.close();
    const byte = new Uint8Array(1);
    const sink = new Uint8Array(16);
    return {
      echo: async () => {
        await sender.write(byte);
        await receiver.read(sink);
      },
      close: () => {
        for (const end of [sender, receiver]) {
          try {
            end.close();
          } catch {
            // Closed already (it failed).
          }
        }
      },
    };
  } catch (error) {
    console.warn(`nnserve: the burst polling window is off: no Unix socket pair (${error})`);
    return undefined;
  } finally {
    if (dir) await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
