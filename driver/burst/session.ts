/**
 * A burst (NNAPI HAL 1.2 `IBurstContext`): one session of executions of one compilation
 * over a message channel. It keeps the memory slot cache for its lifetime (`slot_table.ts`:
 * unknown slots are asked of the client, NNAPI's `IBurstCallback::getMemories`), runs
 * requests in arrival order through the same execution path as REST, answers each with a
 * RESULT frame, and bounds what it holds: at most `maxInFlight` requests (refusals hold nothing),
 * at most `maxSlots` memory slots, and no new result while the client leaves more than
 * `maxBufferedBytes` unread.
 */
import type { HeldPool } from "../../memory/pools.ts";
import { checkRegion } from "../../memory/pools.ts";
import {
  type BurstArgument,
  type BurstOutput,
  type BurstRequest,
  type BurstResult,
  decodeRequest,
  encodeResult,
  FrameError,
  MAX_FRAME_BYTES,
} from "./protocol.ts";
import { DriverError, type ErrorStatus, type Limit } from "../../nnapi/errors.ts";
import type {
  ExecutionRequest,
  ExecutionResult,
  InputArgument,
  OutputArgument,
} from "../execution/request.ts";
import { toBytes } from "../../nnapi/tensor.ts";
import { type RequestPolling, StreamPolling } from "./polling_window.ts";
import { SlotTable } from "./slot_table.ts";

/** What a burst needs from the driver. */
export interface BurstHost {
  execute(owner: string, compilation: string, request: ExecutionRequest): Promise<ExecutionResult>;
  /** Holds a client's memory for a slot: it stays valid, and counted, until released. */
  memory(owner: string, id: string): Promise<HeldPool>;
  /** Counts a refusal by a limit (metrics); other errors are ignored. */
  countRefusal(error: DriverError): void;
  /** Polling for the next request after a result (NNAPI's burst server polling window). */
  readonly polling: RequestPolling;
}

/** The socket as the burst sees it. */
export interface BurstTransport {
  sendBinary(bytes: Uint8Array<ArrayBuffer>): void;
  sendText(text: string): void;
  /** Ends the channel; the burst has released everything and ignores the client already. */
  close(code: number, reason: string): void;
  /** Bytes sent but not yet taken by the network (WebSocket `bufferedAmount`). */
  bufferedAmount(): number;
}

/** Limits of a burst. */
export interface BurstOptions {
  /** Requests held at once (queued or running); more are refused at once, holding nothing. */
  maxInFlight: number;
  /** Memory slots mapped at once (NNAPI's burst memory cache is per burst, so is its bound). */
  maxSlots: number;
  /** How long a request waits for the client to map unknown slots. */
  slotCallbackMs: number;
  /** Unread result bytes after which the burst waits before sending more. */
  maxBufferedBytes: number;
  /** Requests of one burst running at once (inline-only ones; slot users run alone). */
  parallelism: number;
}

/**
 * Defaults: 32 requests in flight, 1024 slots, 5 s for slot callbacks, 16 MiB unread, 4 at
 * once.
 */
export const DEFAULT_BURST_OPTIONS: BurstOptions = {
  maxInFlight: 32,
  maxSlots: 1024,
  slotCallbackMs: 5000,
  maxBufferedBytes: 16 * 1024 * 1024,
  parallelism: 4,
};

/** Close code when the compilation behind a burst is deleted. */
export const CLOSE_COMPILATION_DELETED = 4410;
/** Close code when a client ignores the in-flight window or never reads its results. */
export const CLOSE_POLICY = 1008;
/** Close code of a burst the service ends because it is shutting down (RFC 6455 Going Away). */
export const CLOSE_GOING_AWAY = 1001;
/**
 * How many windows' worth of refusals, beyond the requests accepted meanwhile, a client may
 * collect before it is disconnected: one that overshoots now and then stays near zero.
 */
const OVERSHOOT_WINDOWS = 4;

/** Whether a request reads or writes memory slots (and so must run in order). */
function usesSlots(request: BurstRequest): boolean {
  return request.inputs.some(isSlot) || request.outputs.some(isSlot);
}

function isSlot(argument: BurstArgument): boolean {
  return argument.kind === "slot";
}

/** An accepted request waiting for its turn. */
interface Pending {
  request: BurstRequest;
  received: number;
}

/** One burst session. */
export class BurstSession {
  readonly owner: string;
  readonly compilation: string;
  readonly #host: BurstHost;
  readonly #transport: BurstTransport;
  readonly #options: BurstOptions;
  readonly #slots: SlotTable;
  readonly #queue: Pending[] = [];
  #running = false;
  /** Requests the running pump has started and not answered yet, oldest first. */
  readonly #started: { result: Promise<BurstResult>; ordered: boolean }[] = [];
  /** Requests taken from the queue whose results are not sent yet. */
  #active = 0;
  #closed = false;
  /** Frames refused minus requests accepted since (never below 0): how far past the window. */
  #overshoot = 0;
  /** Polling for the next request after a result. */
  readonly #polling: StreamPolling;

  constructor(
    host: BurstHost,
    transport: BurstTransport,
    context: { owner: string; compilation: string; options?: Partial<BurstOptions> },
  ) {
    this.#host = host;
    this.#transport = transport;
    this.owner = context.owner;
    this.compilation = context.compilation;
    this.#options = { ...DEFAULT_BURST_OPTIONS, ...context.options };
    this.#slots = new SlotTable(this.#options.maxSlots);
    this.#polling = new StreamPolling(host.polling);
  }

  /** Announces the burst's limits to the client (the first message on the channel). */
  start(): void {
    this.#sendControl({
      type: "ready",
      compilation: this.compilation,
      maxInFlight: this.#options.maxInFlight,
      maxSlots: this.#options.maxSlots,
      maxFrameBytes: MAX_FRAME_BYTES,
    });
  }

  /** Memory slots mapped and requests held, for metrics. */
  get stats(): { slots: number; inFlight: number } {
    return { slots: this.#slots.size, inFlight: this.#queue.length + this.#active };
  }

  /** Handles one message from the client. */
  receive(data: string | Uint8Array): void {
    if (this.#closed) return;
    if (typeof data === "string") {
      this.#control(data);
      return;
    }
    let request: BurstRequest;
    try {
      request = decodeRequest(data);
    } catch (error) {
      const e = error as FrameError;
      this.#refuse(e.id, "INVALID_ARGUMENT", e.message);
      return;
    }
    if (this.#queue.length + this.#active >= this.#options.maxInFlight) {
      const message = `more than ${this.#options.maxInFlight} requests in flight`;
      this.#refuse(request.id, "RESOURCE_EXHAUSTED_TRANSIENT", message, "burst_window");
      return;
    }
    this.#overshoot = Math.max(0, this.#overshoot - 1);
    const received = performance.now();
    this.#polling.received(received);
    this.#queue.push({ request, received });
    // While the pump awaits the oldest request, a new one starts beside it at once (its
    // execution may share a batch, or an executor, with those running).
    if (this.#running) this.#startQueued();
    else this.#pump();
  }

  /**
   * Answers a binary frame the burst does not take (over the window, or malformed) at once:
   * it holds no place, so its answer may overtake the results of earlier requests. A client
   * whose refusals outrun its accepted requests by `OVERSHOOT_WINDOWS` windows ignores the
   * window (or sends garbage) and is disconnected, which bounds what its refusals cost.
   */
  #refuse(id: number | undefined, status: ErrorStatus, message: string, limit?: Limit): void {
    if (++this.#overshoot > OVERSHOOT_WINDOWS * this.#options.maxInFlight) {
      this.close(CLOSE_POLICY, "far more requests than the burst window allows");
      return;
    }
    if (limit) this.#host.countRefusal(new DriverError(status, message, { limit }));
    if (id === undefined) this.#sendControl({ type: "error", status, message });
    else this.#transport.sendBinary(encodeResult({ id, status, message, outputs: [] }));
  }

  /** Ends the burst: releases slots and pending requests, closes the channel. */
  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.release();
    this.#transport.close(code, reason);
  }

  /** Releases everything the burst holds (the channel closed or died). */
  release(): void {
    this.#closed = true;
    this.#slots.release();
    this.#queue.length = 0;
  }

  #sendControl(message: Record<string, unknown>): void {
    if (!this.#closed) this.#transport.sendText(JSON.stringify(message));
  }

  #control(text: string): void {
    let message: { type?: unknown; slot?: unknown; memory?: unknown };
    try {
      message = JSON.parse(text);
    } catch {
      this.#sendControl({ type: "error", status: "INVALID_ARGUMENT", message: "not JSON" });
      return;
    }
    const slot = message.slot;
    if (!Number.isInteger(slot) || (slot as number) < 0 || (slot as number) > 0xffffffff) {
      this.#sendControl({
        type: "error",
        status: "INVALID_ARGUMENT",
        message: `control message needs an integer "slot"`,
      });
      return;
    }
    if (message.type === "map") this.#map(slot as number, message.memory);
    else if (message.type === "free") {
      this.#slots.free(slot as number);
      this.#sendControl({ type: "freed", slot });
    } else {
      this.#sendControl({
        type: "error",
        status: "INVALID_ARGUMENT",
        slot,
        message: `unknown control message type ${JSON.stringify(message.type)}`,
      });
    }
  }

  async #map(slot: number, memory: unknown): Promise<void> {
    if (typeof memory !== "string") {
      this.#sendControl({ type: "error", status: "INVALID_ARGUMENT", slot, message: "no memory" });
      this.#slots.settle(slot);
      return;
    }
    try {
      if (!this.#slots.roomFor(slot)) throw this.#slots.full();
      const held = await this.#host.memory(this.owner, memory);
      if (!this.#slots.set(slot, held)) {
        if (this.#closed) return;
        throw this.#slots.full();
      }
      this.#sendControl({ type: "mapped", slot, size: held.pool.size });
    } catch (error) {
      const e = error as DriverError;
      this.#sendControl({ type: "error", status: e.status, slot, message: e.message });
    }
    this.#slots.settle(slot);
  }

  /**
   * Starts queued requests while there is room: requests with only inline data overlap on
   * the executor pool (up to `parallelism`); a request that touches memory slots waits for
   * everything before it and holds back everything after it, so slot reads and writes
   * happen in request order.
   */
  #startQueued(): void {
    const started = this.#started;
    while (this.#queue.length > 0 && started.length < this.#options.parallelism) {
      const ordered = usesSlots(this.#queue[0].request);
      if (started.some((s) => s.ordered) || (ordered && started.length > 0)) break;
      const pending = this.#queue.shift()!;
      started.push({ result: this.#run(pending.request, pending.received, ordered), ordered });
      this.#active++;
    }
  }

  /** Runs queued requests and sends their results in arrival order. */
  async #pump(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    const started = this.#started;
    try {
      while ((this.#queue.length > 0 || started.length > 0) && !this.#closed) {
        this.#startQueued();
        const result = await started.shift()!.result;
        if (this.#transport.bufferedAmount() > this.#options.maxBufferedBytes) await this.#drain();
        this.#active--;
        if (this.#closed) return;
        this.#transport.sendBinary(carriedResult(result));
        this.#polling.answered();
      }
    } finally {
      this.#running = false;
      this.#active = 0;
      started.length = 0;
    }
  }

  /** Waits while the client leaves too many result bytes unread. */
  async #drain(): Promise<void> {
    while (!this.#closed && this.#transport.bufferedAmount() > this.#options.maxBufferedBytes) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  #argument(arg: BurstArgument, what: string, holds: HeldPool[]): InputArgument {
    if (arg.kind === "omitted") return { value: { kind: "omitted" } };
    if (arg.kind === "inline") {
      return { value: { kind: "bytes", bytes: arg.bytes }, dimensions: arg.dimensions };
    }
    const pool = this.#slots.hold(arg.slot, what, holds);
    checkRegion(pool.size, arg.offset, arg.length, what);
    return {
      value: { kind: "bytes", bytes: pool.bytes.subarray(arg.offset, arg.offset + arg.length) },
      dimensions: arg.dimensions,
    };
  }

  #output(arg: BurstArgument, what: string, holds: HeldPool[]): OutputArgument {
    if (arg.kind !== "slot") {
      return { dimensions: arg.kind === "inline" ? arg.dimensions : undefined };
    }
    const pool = this.#slots.hold(arg.slot, what, holds);
    return {
      dimensions: arg.dimensions,
      target: { kind: "pool", pool, offset: arg.offset, length: arg.length },
    };
  }

  /** Runs one request; `withSlots`: it reads or writes memory slots (`usesSlots`). */
  async #run(request: BurstRequest, received: number, withSlots: boolean): Promise<BurstResult> {
    const holds: HeldPool[] = [];
    try {
      if (withSlots) {
        await this.#slots.resolve(request, this.#options.slotCallbackMs, (slots) => {
          this.#sendControl({ type: "getMemories", requestId: request.id, slots });
        });
      }
      const deadlineMs = request.deadlineUs > 0
        ? Math.max(0.001, request.deadlineUs / 1000 - (performance.now() - received))
        : undefined;
      const inputs = request.inputs.map((a, k) => this.#argument(a, `input ${k}`, holds));
      const targets = request.outputs.length > 0
        ? request.outputs.map((a, k) => this.#output(a, `output ${k}`, holds))
        : undefined;
      // Slots see writes made through other replicas since the last request.
      if (holds.length > 0) await Promise.all(holds.map((held) => held.refresh()));
      const result = await this.#host.execute(this.owner, this.compilation, {
        inputs,
        outputs: targets,
        measureTiming: request.measureTiming,
        deadlineMs,
      });
      const outputs: BurstOutput[] = result.outputs.map((o, k) => ({
        dimensions: o.shape,
        isSufficient: result.outputShapes[k].isSufficient,
        bytes: o.data ? toBytes(o.data) : new Uint8Array(0),
      }));
      return { id: request.id, status: "NONE", message: "", outputs, timing: result.timing };
    } catch (error) {
      const e = error instanceof DriverError
        ? error
        : new DriverError("GENERAL_FAILURE", String(error));
      this.#host.countRefusal(e);
      const outputs = (e.details.outputShapes ?? []).map((s) => ({
        ...s,
        bytes: new Uint8Array(0),
      }));
      return { id: request.id, status: e.status, message: e.message, outputs };
    } finally {
      for (const held of holds) held.release();
    }
  }
}

/**
 * A result's frame; or, when its outputs are more than a frame carries ({@link MAX_FRAME_BYTES}:
 * Deno's own WebSocket client, for one, drops the connection on a longer message), an
 * INVALID_ARGUMENT result of that request alone, saying where they fit.
 */
function carriedResult(result: BurstResult): Uint8Array<ArrayBuffer> {
  const frame = encodeResult(result);
  if (frame.byteLength <= MAX_FRAME_BYTES) return frame;
  return encodeResult({
    id: result.id,
    status: "INVALID_ARGUMENT",
    message: `the outputs take a result frame of ${frame.byteLength} bytes, more than a ` +
      `burst frame carries (${MAX_FRAME_BYTES}): write them to memories (slots)`,
    outputs: [],
  });
}
