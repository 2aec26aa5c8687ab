/**
 * The request window of a burst: requests are sent in call order while fewer than the
 * service's `maxInFlight` are unanswered, and wait in a local queue otherwise, so callers
 * may compute any number of times without waiting and never make the service refuse a
 * request (or close the burst) for exceeding its window.
 *
 * The window owns the requests sent and not yet answered, the queue, the request ids and
 * the callers waiting for room; the burst owns the socket it sends through.
 */
import { type EncodedRequest, MAX_UINT32 } from "./burst_codec.ts";
import type { ExecutionResult } from "./execution.ts";

/** A request of the window: its frame and its caller's promise. */
export interface PendingRequest extends EncodedRequest {
  resolve(result: ExecutionResult): void;
  reject(error: unknown): void;
}

/** What the window needs of the burst's socket. */
export interface WindowChannel {
  /** Whether frames can still be sent (false from the start of the closing handshake). */
  isOpen(): boolean;
  /** Whether the socket has closed: nothing more will be answered. */
  isClosed(): boolean;
  send(frame: Uint8Array<ArrayBuffer>): void;
  /** What a request fails with when it cannot be sent any more. */
  closedError(): unknown;
}

/** The requests of one burst, in order. */
export class RequestWindow {
  /** Requests the service holds at once (from its `ready` message; 1 until then). */
  maxInFlight = 1;
  readonly #channel: WindowChannel;
  #nextId = 1;
  /** Sent and unanswered, by request id (in send order). */
  readonly #sent = new Map<number, PendingRequest>();
  /** Waiting for room in the window. */
  readonly #queue: PendingRequest[] = [];
  /** Callers of `room` waiting for the window to have room. */
  #roomWaiters: (() => void)[] = [];

  constructor(channel: WindowChannel) {
    this.#channel = channel;
  }

  /** The id of the next request: 1 to 2^32 − 1, wrapping (0 is never used). */
  nextId(): number {
    const id = this.#nextId;
    this.#nextId = id === MAX_UINT32 ? 1 : id + 1;
    return id;
  }

  /** Requests sent and unanswered plus those waiting to be sent. */
  get inFlight(): number {
    return this.#sent.size + this.#queue.length;
  }

  /** Sends the request now, or queues it behind others while the window is full. */
  submit(request: PendingRequest): void {
    if (this.#queue.length === 0 && this.#sent.size < this.maxInFlight) this.#send(request);
    else this.#queue.push(request);
  }

  /**
   * Takes the request a RESULT frame answers out of the window, whose room goes to the
   * queued requests; undefined when no request with that id is in flight.
   */
  answer(id: number): PendingRequest | undefined {
    const request = this.#sent.get(id);
    if (!request) return undefined;
    this.#sent.delete(id);
    this.#pump();
    return request;
  }

  /** Resolves when fewer than `maxInFlight` requests are pending (or the burst closed). */
  room(): Promise<void> {
    if (this.inFlight < this.maxInFlight || this.#channel.isClosed()) return Promise.resolve();
    return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  /** Rejects every request sent or queued (the socket closed); `wake` the waiters after. */
  rejectAll(error: unknown): void {
    const requests = [...this.#sent.values(), ...this.#queue];
    this.#sent.clear();
    this.#queue.length = 0;
    for (const request of requests) request.reject(error);
  }

  /** Wakes every caller of `room`. */
  wake(): void {
    const waiters = this.#roomWaiters;
    this.#roomWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Sends queued requests while the window has room. */
  #pump(): void {
    while (
      this.#queue.length > 0 && this.#sent.size < this.maxInFlight && !this.#channel.isClosed()
    ) {
      this.#send(this.#queue.shift()!);
    }
    if (this.inFlight < this.maxInFlight) this.wake();
  }

  #send(request: PendingRequest): void {
    if (!this.#channel.isOpen()) {
      request.reject(this.#channel.closedError());
      return;
    }
    this.#sent.set(request.id, request);
    this.#channel.send(request.frame);
  }
}
