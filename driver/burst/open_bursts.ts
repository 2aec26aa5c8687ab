/**
 * The service's open bursts: per-client places (NNSERVE_MAX_BURSTS_PER_CLIENT, reserved
 * before the WebSocket upgrade so two upgrades cannot both take the last place), the
 * sessions themselves, and closing them when their compilation is deleted or the service
 * shuts down. One owner (the server's thread) updates it, so counts need no locking.
 */
import { DriverError } from "../../nnapi/errors.ts";
import {
  type BurstOptions,
  BurstSession,
  type BurstTransport,
  CLOSE_COMPILATION_DELETED,
  CLOSE_GOING_AWAY,
} from "./session.ts";

/** Default of the bursts one client may hold open. */
export const DEFAULT_MAX_BURSTS_PER_CLIENT = 64;

/** Open bursts and the places clients hold. */
export class OpenBursts {
  readonly #sessions = new Set<BurstSession>();
  readonly #places = new Map<string, number>();
  readonly #maxPerClient: number;
  readonly #backend: ConstructorParameters<typeof BurstSession>[0];

  constructor(
    backend: ConstructorParameters<typeof BurstSession>[0],
    maxPerClient = DEFAULT_MAX_BURSTS_PER_CLIENT,
  ) {
    this.#backend = backend;
    this.#maxPerClient = maxPerClient;
  }

  /** Open sessions, for the metrics' gauges. */
  get sessions(): ReadonlySet<BurstSession> {
    return this.#sessions;
  }

  /**
   * Reserves one of the client's places for a burst about to open; refuses (429, retry after
   * a second) when the client holds its limit. The returned release gives the place back
   * (once, however often it is called).
   */
  reserve(owner: string): () => void {
    const held = this.#places.get(owner) ?? 0;
    if (held >= this.#maxPerClient) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_TRANSIENT",
        `this client has ${held} bursts open, its limit (NNSERVE_MAX_BURSTS_PER_CLIENT); ` +
          "close one or retry later",
        { retryAfterSeconds: 1, limit: "bursts" },
      );
    }
    this.#places.set(owner, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#places.get(owner) ?? 1) - 1;
      if (left > 0) this.#places.set(owner, left);
      else this.#places.delete(owner);
    };
  }

  /** Starts a burst session; `end` it when its channel closes. */
  open(
    owner: string,
    compilation: string,
    transport: BurstTransport,
    options?: Partial<BurstOptions>,
  ): BurstSession {
    const session = new BurstSession(this.#backend, transport, { owner, compilation, options });
    this.#sessions.add(session);
    session.start();
    return session;
  }

  /** Releases everything a burst held. */
  end(session: BurstSession): void {
    session.release();
    this.#sessions.delete(session);
  }

  /** Closes the bursts of a deleted compilation. */
  closeForCompilation(compilation: string): void {
    for (const session of [...this.#sessions]) {
      if (session.compilation !== compilation) continue;
      session.close(CLOSE_COMPILATION_DELETED, "the compilation was deleted");
      this.#sessions.delete(session);
    }
  }

  /** Requests held by all bursts (queued or running). */
  inFlight(): number {
    return [...this.#sessions].reduce((n, b) => n + b.stats.inFlight, 0);
  }

  /**
   * Shutting down: waits until no burst has a request in flight, or `deadline` (epoch ms),
   * then closes every burst with 1001 Going Away; returns how many burst requests it cut.
   */
  async drain(deadline: number): Promise<number> {
    while (this.inFlight() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const cut = this.inFlight();
    for (const session of [...this.#sessions]) {
      session.close(CLOSE_GOING_AWAY, "the service is shutting down");
      this.#sessions.delete(session);
    }
    return cut;
  }
}
