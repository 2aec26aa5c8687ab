/**
 * `Burst`: a session of low-overhead executions of one compilation (NNAPI
 * `ANeuralNetworksBurst`, HAL `IBurstContext`) over a WebSocket: binary EXECUTE and RESULT
 * frames (`burst_frames.ts`, docs/burst-protocol.md) instead of one HTTP request per
 * execution.
 *
 * The burst owns its socket and dispatches what arrives on it; the rest is its parts:
 * - `burst_codec.ts`: inputs and output descriptions to EXECUTE frames, RESULT frames to
 *   typed outputs or errors;
 * - `burst_window.ts`: requests sent in order while fewer than the service's window
 *   (`maxInFlight`, from its `ready` message) are unanswered, more queued locally, so
 *   `compute` may be called any number of times without waiting and results still come
 *   back in order;
 * - `burst_slots.ts`: the table of memory slots (`mapMemory`, `setSlot` answered on the
 *   service's `getMemories`, `freeSlot`);
 * - `burst_pipeline.ts`: `computePipelined`;
 * - `burst_open.ts`: `openBurst`, the WebSocket upgrade.
 *
 * A failed request rejects with `NnapiError` carrying the status of its RESULT frame
 * (`httpStatus` 0: there is no HTTP exchange); when the socket closes, everything pending
 * rejects too.
 */
import {
  type BurstResult,
  decodeResult as decodeResultFrame,
  MAX_FRAME_BYTES,
} from "./burst_frames.ts";
import {
  type BurstComputeOptions,
  type BurstInput,
  checkSlot,
  decodeCompute,
  encodeCompute,
  resultError,
} from "./burst_codec.ts";
import type { BurstOpenOptions } from "./burst_open.ts";
import { runPipelined } from "./burst_pipeline.ts";
import { SlotTable } from "./burst_slots.ts";
import type { BurstSocket } from "./burst_socket.ts";
import { type PendingRequest, RequestWindow } from "./burst_window.ts";
import type { ExecutionResult, ExecutionTarget } from "./execution.ts";
import { isErrorStatus, NnapiError } from "./http.ts";
import type { Memory } from "./memory.ts";
import type { ErrorStatus } from "./types.ts";

/** How the burst's socket closed. */
export interface BurstClose {
  /** WebSocket close code: 1000 (normal), {@link CLOSE_COMPILATION_DELETED}, ... */
  code: number;
  /** The close frame's reason text (may be empty). */
  reason: string;
}

/** WebSocket close code of a burst whose compilation was deleted. */
export const CLOSE_COMPILATION_DELETED = 4410;
/** WebSocket close code of a burst whose client ignored the window or stopped reading. */
export const CLOSE_POLICY = 1008;

type ControlMessage = {
  type?: unknown;
  maxFrameBytes?: unknown;
  slot?: unknown;
  slots?: unknown;
  requestId?: unknown;
  status?: unknown;
  message?: unknown;
  maxInFlight?: unknown;
  size?: unknown;
};

/** The status a request still pending when the socket closed fails with. */
function closeStatus(code: number): ErrorStatus {
  if (code === CLOSE_COMPILATION_DELETED) return "NOT_FOUND";
  if (code === CLOSE_POLICY) return "RESOURCE_EXHAUSTED_PERSISTENT";
  return "DEVICE_UNAVAILABLE";
}

/** An open burst on one compilation. */
export class Burst {
  /** The compilation the burst executes. */
  readonly compilation: ExecutionTarget;
  /** Resolves when the socket has closed, with its close code and reason. */
  readonly closed: Promise<BurstClose>;
  readonly #socket: BurstSocket;
  readonly #onError: ((error: NnapiError) => void) | undefined;
  readonly #ready: Promise<number>;
  readonly #window: RequestWindow;
  readonly #slots: SlotTable;
  /** The longest frame the service takes (its `ready` says; 64 MiB until then). */
  #maxFrameBytes = MAX_FRAME_BYTES;
  #close: BurstClose | undefined;

  /** Use `Compilation.burst()`. */
  constructor(socket: BurstSocket, compilation: ExecutionTarget, options: BurstOpenOptions = {}) {
    this.#socket = socket;
    this.compilation = compilation;
    this.#onError = options.onError;
    this.#window = new RequestWindow({
      isOpen: () => socket.isOpen,
      isClosed: () => this.isClosed,
      send: (frame) => socket.send(frame),
      closedError: () => this.#closedError(),
    });
    this.#slots = new SlotTable((message) => this.#sendText(message));
    let ready!: (maxInFlight: number) => void;
    let notReady!: (error: unknown) => void;
    this.#ready = new Promise((resolve, reject) => {
      ready = resolve;
      notReady = reject;
    });
    this.#ready.catch(() => {});
    let closed!: (close: BurstClose) => void;
    this.closed = new Promise((resolve) => closed = resolve);
    socket.onMessage = (data) => {
      if (typeof data === "string") this.#control(data, ready);
      else this.#result(new Uint8Array(data));
    };
    socket.onClose = (close) => {
      this.#close = close;
      notReady(this.#closedError());
      this.#failAll();
      closed(this.#close);
    };
    socket.start();
  }

  /** Resolves once the service announced the burst (`ready`). */
  async ready(): Promise<this> {
    this.#window.maxInFlight = await this.#ready;
    return this;
  }

  /** Requests the service holds at once; the burst sends no more than that. */
  get maxInFlight(): number {
    return this.#window.maxInFlight;
  }

  /** Requests sent and unanswered plus those waiting to be sent. */
  get inFlight(): number {
    return this.#window.inFlight;
  }

  /** Whether the socket has closed. */
  get isClosed(): boolean {
    return this.#close !== undefined;
  }

  /**
   * What requests fail with once the burst is closed: NOT_FOUND when its compilation was
   * deleted (4410), RESOURCE_EXHAUSTED_PERSISTENT when the service ended it for ignoring the
   * window (1008), DEVICE_UNAVAILABLE otherwise.
   */
  #closedError(): NnapiError {
    const close = this.#close;
    if (!close) return new NnapiError("DEVICE_UNAVAILABLE", 0, "the burst is closing");
    return new NnapiError(
      closeStatus(close.code),
      0,
      `the burst closed (code ${close.code}${close.reason ? `: ${close.reason}` : ""})`,
      { body: { ...close } },
    );
  }

  #failAll(): void {
    const error = this.#closedError();
    this.#window.rejectAll(error);
    this.#slots.rejectAll(error);
    this.#window.wake();
  }

  /** Hands an error outside any request to `onError` (whose own failures are dropped). */
  #report(error: NnapiError): void {
    try {
      this.#onError?.(error);
    } catch {
      // The handler's failure must not break the burst's message handling.
    }
  }

  #sendText(message: Record<string, unknown>): void {
    if (this.#socket.isOpen) this.#socket.send(JSON.stringify(message));
  }

  #control(text: string, ready: (maxInFlight: number) => void): void {
    let message: ControlMessage;
    try {
      message = JSON.parse(text);
    } catch {
      this.#report(new NnapiError("GENERAL_FAILURE", 0, `a control message is not JSON`));
      return;
    }
    const slot = typeof message.slot === "number" ? message.slot : undefined;
    switch (message.type) {
      case "ready":
        if (typeof message.maxFrameBytes === "number") this.#maxFrameBytes = message.maxFrameBytes;
        ready(typeof message.maxInFlight === "number" ? message.maxInFlight : 1);
        return;
      case "mapped":
        if (slot !== undefined) this.#slots.mapped(slot);
        return;
      case "freed":
        if (slot !== undefined) this.#slots.freed(slot);
        return;
      case "getMemories":
        if (!this.isClosed) this.#slots.answerGetMemories(message.slots);
        return;
      case "error": {
        const error = new NnapiError(
          isErrorStatus(message.status) ? message.status : "GENERAL_FAILURE",
          0,
          typeof message.message === "string" ? message.message : "the burst reported an error",
          { body: message },
        );
        if (slot === undefined || !this.#slots.mapFailed(slot, error)) this.#report(error);
        return;
      }
      default:
        // Messages of later versions of the protocol.
        return;
    }
  }

  #result(bytes: Uint8Array): void {
    let result: BurstResult;
    try {
      result = decodeResultFrame(bytes);
    } catch (error) {
      this.#report(
        new NnapiError("GENERAL_FAILURE", 0, `undecodable result frame: ${error}`, {
          cause: error,
        }),
      );
      return;
    }
    const request = this.#window.answer(result.id);
    if (!request) {
      this.#report(
        new NnapiError("GENERAL_FAILURE", 0, `a result for unknown request ${result.id}`),
      );
      return;
    }
    const error = resultError(result);
    if (error) {
      request.reject(error);
      return;
    }
    try {
      request.resolve(decodeCompute(this.compilation.signature, result, request));
    } catch (error) {
      request.reject(error);
    }
  }

  /**
   * Runs one execution with the inputs in model order. The inputs are encoded (copied) before
   * this returns, so their arrays may be reused at once. The request is sent now, or queued
   * while the window is full; results come back in the order of the calls.
   */
  compute(
    inputs: readonly BurstInput[],
    options: BurstComputeOptions = {},
  ): Promise<ExecutionResult> {
    if (!this.#socket.isOpen) return Promise.reject(this.#closedError());
    let request: PendingRequest;
    try {
      request = {
        ...encodeCompute(this.compilation.signature, inputs, {
          ...options,
          nextId: () => this.#window.nextId(),
        }),
        resolve: () => {},
        reject: () => {},
      };
      // Sent, a longer frame would end the connection (and every request on it).
      if (request.frame.byteLength > this.#maxFrameBytes) {
        throw new NnapiError(
          "INVALID_ARGUMENT",
          0,
          `the inputs take an EXECUTE frame of ${request.frame.byteLength} bytes, more than a ` +
            `burst frame carries (${this.#maxFrameBytes}): pass them in memories (slots), or ` +
            "execute over HTTP",
        );
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const promise = new Promise<ExecutionResult>((resolve, reject) => {
      request.resolve = resolve;
      request.reject = reject;
    });
    this.#window.submit(request);
    return promise;
  }

  /**
   * Streams frames through the burst: takes the next frame only while the window has room,
   * keeps up to `maxInFlight` requests in flight, and calls `onResult` with each result in
   * frame order (awaiting it before the next). Stops at the first failure, which it throws
   * after the requests already sent have settled. Returns the number of frames computed.
   */
  computePipelined(
    frames: Iterable<readonly BurstInput[]> | AsyncIterable<readonly BurstInput[]>,
    onResult: (result: ExecutionResult, index: number) => void | Promise<void>,
    options: BurstComputeOptions = {},
  ): Promise<number> {
    return runPipelined(this, frames, {
      onResult,
      room: () => this.#window.room(),
      compute: options,
    });
  }

  /**
   * Registers `memory` as `slot` without telling the service: the service asks for it
   * (`getMemories`) when a request first uses the slot.
   */
  setSlot(slot: number, memory: Memory): void {
    checkSlot("setSlot", slot);
    this.#slots.set(slot, memory);
  }

  /** Maps `slot` to `memory` on the service now; resolves once the service has mapped it. */
  mapMemory(slot: number, memory: Memory): Promise<void> {
    checkSlot("mapMemory", slot);
    if (!this.#socket.isOpen) return Promise.reject(this.#closedError());
    return this.#slots.map(slot, memory);
  }

  /** Evicts `slot` here and on the service; resolves once the service has freed it. */
  freeSlot(slot: number): Promise<void> {
    checkSlot("freeSlot", slot);
    if (!this.#socket.isOpen) return Promise.reject(this.#closedError());
    return this.#slots.free(slot);
  }

  /**
   * Closes the socket (the service then releases everything the burst held); requests still
   * pending reject. Resolves with how the socket closed.
   */
  close(code = 1000, reason = ""): Promise<BurstClose> {
    if (!this.isClosed) this.#socket.close(code, reason);
    return this.closed;
  }

  /** Closes the burst at the end of an `await using` block. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
