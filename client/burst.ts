/**
 * `Burst`: a session of low-overhead executions of one compilation (NNAPI
 * `ANeuralNetworksBurst`, HAL `IBurstContext`) over a WebSocket: binary EXECUTE and RESULT
 * frames (`driver/burst_protocol.ts`, docs/burst-protocol.md) instead of one HTTP request
 * per execution.
 *
 * The burst owns its socket, the requests it sent and has yet to send, and its table of
 * memory slots: small integers standing for service memories in requests
 * (`{slot, offset, length}`). A slot is either mapped up front (`mapMemory`, answered by the
 * service) or only registered locally (`setSlot`), in which case the service asks for it the
 * first time a request uses it (`getMemories`, NNAPI `IBurstCallback::getMemories`) and the
 * burst answers from the table. `freeSlot` evicts one.
 *
 * Requests are sent in order while fewer than the service's window (`maxInFlight`, from its
 * `ready` message) are unanswered; more wait in a local queue, so `compute` may be called any
 * number of times without waiting and results still come back in order. A failed request
 * rejects with `NnapiError` carrying the status of its RESULT frame (`httpStatus` 0: there is
 * no HTTP exchange); when the socket closes, everything pending rejects too.
 */
import {
  type BurstArgument,
  type BurstResult,
  decodeResult as decodeResultFrame,
  encodeRequest,
  NO_DIMENSIONS,
} from "../driver/burst_protocol.ts";
import { viewBytes } from "../driver/tensor.ts";
import {
  type BurstSocket,
  denoSocket,
  hasDenoSockets,
  standardSocket,
  UpgradeRefused,
} from "./burst_socket.ts";
import type { ExecutionOutput, ExecutionResult, ExecutionTarget } from "./execution.ts";
import { NnapiError, type Transport } from "./http.ts";
import type { Memory } from "./memory.ts";
import { type TensorArray, type TensorValues, toTensorArray } from "./tensor.ts";
import { ERROR_STATUSES, type ErrorStatus, type OperandType } from "./types.ts";

/** A region of the memory mapped to a slot: `length` bytes from `offset`. */
export interface SlotRegion {
  slot: number;
  offset: number;
  length: number;
  /** Completes an operand whose model dimensions are not fully known. */
  dimensions?: readonly number[];
}

/** Inline tensor data with dimensions completing the operand's. */
export interface BurstTensor {
  data: TensorValues | number;
  dimensions: readonly number[];
}

/**
 * One input of a burst request, in model input order: values (converted to the operand's
 * type, a number being a scalar), a slot region, or `null` for an omitted optional input.
 */
export type BurstInput = TensorValues | number | null | SlotRegion | BurstTensor;

/**
 * One output of a burst request: returned inline (optionally with expected dimensions) or
 * written into a slot region (then returned with dimensions only).
 */
export type BurstOutput = SlotRegion | { dimensions?: readonly number[] } | undefined;

/** Options of one burst request. */
export interface BurstComputeOptions {
  measureTiming?: boolean;
  /** Fails with MISSED_DEADLINE_* when the request takes longer (counted from its receipt). */
  deadlineMs?: number;
  /** Per output (model order); outputs not described come back inline. */
  outputs?: readonly BurstOutput[];
}

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

/** How the burst's socket closed. */
export interface BurstClose {
  code: number;
  reason: string;
}

/** WebSocket close code of a burst whose compilation was deleted. */
export const CLOSE_COMPILATION_DELETED = 4410;
/** WebSocket close code of a burst whose client ignored the window or stopped reading. */
export const CLOSE_POLICY = 1008;

const MAX_UINT32 = 0xffffffff;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** API keys of SDK transports, for burst URLs (the transport keeps its key private). */
const API_KEYS = new WeakMap<Transport, string>();

/** Remembers the API key a transport authenticates with, for the bursts opened through it. */
export function rememberApiKey(transport: Transport, apiKey: string | undefined): void {
  if (apiKey !== undefined) API_KEYS.set(transport, apiKey);
}

interface Request {
  id: number;
  frame: Uint8Array<ArrayBuffer>;
  /** Outputs written to slots (returned without data). */
  inSlot: boolean[];
  resolve(result: ExecutionResult): void;
  reject(error: unknown): void;
}

interface ControlWaiter {
  resolve(size?: number): void;
  reject(error: unknown): void;
}

type ControlMessage = {
  type?: unknown;
  slot?: unknown;
  slots?: unknown;
  requestId?: unknown;
  status?: unknown;
  message?: unknown;
  maxInFlight?: unknown;
  size?: unknown;
};

function isSlotRegion(value: object): value is SlotRegion {
  return "slot" in value;
}

function checkSlot(what: string, slot: number): void {
  if (!Number.isInteger(slot) || slot < 0 || slot > MAX_UINT32) {
    throw new RangeError(`${what}: slot ${slot} is not an integer in [0, 2^32)`);
  }
}

function checkDimensions(what: string, dimensions: readonly number[] | undefined): void {
  if (dimensions === undefined) return;
  if (dimensions.length >= NO_DIMENSIONS) {
    throw new RangeError(`${what}: rank ${dimensions.length} is too large for a burst frame`);
  }
  for (const d of dimensions) {
    if (!Number.isInteger(d) || d < 0 || d > MAX_UINT32) {
      throw new RangeError(`${what}: dimension ${d} is not an integer in [0, 2^32)`);
    }
  }
}

function slotArgument(what: string, region: SlotRegion): BurstArgument {
  checkSlot(what, region.slot);
  for (const [name, n] of [["offset", region.offset], ["length", region.length]] as const) {
    if (!Number.isInteger(n) || n < 0 || n > MAX_UINT32) {
      throw new RangeError(`${what}: ${name} ${n} is not an integer in [0, 2^32)`);
    }
  }
  checkDimensions(what, region.dimensions);
  return {
    kind: "slot",
    slot: region.slot,
    offset: region.offset,
    length: region.length,
    ...(region.dimensions ? { dimensions: [...region.dimensions] } : {}),
  };
}

/** The little-endian bytes of the data (the wire order), without copying on LE hosts. */
function littleEndianBytes(data: TensorArray): Uint8Array {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  if (LITTLE_ENDIAN || data.BYTES_PER_ELEMENT === 1) return bytes;
  const copy = bytes.slice();
  for (let i = 0; i < copy.length; i += data.BYTES_PER_ELEMENT) {
    copy.subarray(i, i + data.BYTES_PER_ELEMENT).reverse();
  }
  return copy;
}

/** Output bytes of a RESULT frame as the operand type's typed array (a view when aligned). */
function tensorOf(type: OperandType, bytes: Uint8Array): TensorArray {
  if (LITTLE_ENDIAN) return viewBytes(type, bytes);
  const copy = bytes.slice();
  const data = viewBytes(type, copy);
  for (let i = 0; i < copy.length; i += data.BYTES_PER_ELEMENT) {
    copy.subarray(i, i + data.BYTES_PER_ELEMENT).reverse();
  }
  return data;
}

function inputArgument(type: OperandType, index: number, input: BurstInput): BurstArgument {
  const what = `input ${index}`;
  if (input === null) return { kind: "omitted" };
  if (typeof input === "number") {
    return { kind: "inline", bytes: littleEndianBytes(toTensorArray(type, [input])) };
  }
  if (Array.isArray(input) || ArrayBuffer.isView(input)) {
    return { kind: "inline", bytes: littleEndianBytes(toTensorArray(type, input as TensorValues)) };
  }
  if (isSlotRegion(input)) return slotArgument(what, input);
  const tensor = input as BurstTensor;
  checkDimensions(what, tensor.dimensions);
  const values = typeof tensor.data === "number" ? [tensor.data] : tensor.data;
  return {
    kind: "inline",
    bytes: littleEndianBytes(toTensorArray(type, values)),
    dimensions: [...tensor.dimensions],
  };
}

function outputArgument(index: number, output: BurstOutput): BurstArgument {
  if (output !== undefined && isSlotRegion(output)) return slotArgument(`output ${index}`, output);
  checkDimensions(`output ${index}`, output?.dimensions);
  return {
    kind: "inline",
    bytes: new Uint8Array(0),
    ...(output?.dimensions ? { dimensions: [...output.dimensions] } : {}),
  };
}

function statusOf(value: unknown): ErrorStatus {
  return (ERROR_STATUSES as readonly unknown[]).includes(value)
    ? value as ErrorStatus
    : "GENERAL_FAILURE";
}

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
  #maxInFlight = 1;
  #nextId = 1;
  /** Sent and unanswered, by request id (in send order). */
  readonly #sent = new Map<number, Request>();
  /** Waiting for room in the window. */
  readonly #queue: Request[] = [];
  readonly #slots = new Map<number, Memory>();
  /** Per slot, the `map` messages sent and not yet answered (`mapped` or `error`). */
  readonly #mapWaiters = new Map<number, ControlWaiter[]>();
  readonly #freeWaiters = new Map<number, ControlWaiter[]>();
  /** Callers of `#room` waiting for the window to have room. */
  #roomWaiters: (() => void)[] = [];
  #close: BurstClose | undefined;

  /** Use `Compilation.burst()`. */
  constructor(socket: BurstSocket, compilation: ExecutionTarget, options: BurstOpenOptions = {}) {
    this.#socket = socket;
    this.compilation = compilation;
    this.#onError = options.onError;
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
    this.#maxInFlight = await this.#ready;
    return this;
  }

  /** Requests the service holds at once; the burst sends no more than that. */
  get maxInFlight(): number {
    return this.#maxInFlight;
  }

  /** Requests sent and unanswered plus those waiting to be sent. */
  get inFlight(): number {
    return this.#sent.size + this.#queue.length;
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
    const requests = [...this.#sent.values(), ...this.#queue];
    this.#sent.clear();
    this.#queue.length = 0;
    for (const request of requests) request.reject(error);
    for (const waiters of [...this.#mapWaiters.values(), ...this.#freeWaiters.values()]) {
      for (const waiter of waiters) waiter.reject(error);
    }
    this.#mapWaiters.clear();
    this.#freeWaiters.clear();
    this.#wakeRoomWaiters();
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
        ready(typeof message.maxInFlight === "number" ? message.maxInFlight : 1);
        return;
      case "mapped":
        if (slot !== undefined) {
          this.#settle(this.#mapWaiters, slot)?.resolve(message.size as number);
        }
        return;
      case "freed":
        if (slot !== undefined) this.#settle(this.#freeWaiters, slot)?.resolve();
        return;
      case "getMemories":
        this.#answerGetMemories(message.slots);
        return;
      case "error": {
        const error = new NnapiError(
          statusOf(message.status),
          0,
          typeof message.message === "string" ? message.message : "the burst reported an error",
          { body: message },
        );
        const waiter = slot !== undefined ? this.#settle(this.#mapWaiters, slot) : undefined;
        if (waiter) waiter.reject(error);
        else this.#report(error);
        return;
      }
      default:
        // Messages of later versions of the protocol.
        return;
    }
  }

  #settle(waiters: Map<number, ControlWaiter[]>, slot: number): ControlWaiter | undefined {
    const list = waiters.get(slot);
    const waiter = list?.shift();
    if (list?.length === 0) waiters.delete(slot);
    return waiter;
  }

  #wait(waiters: Map<number, ControlWaiter[]>, slot: number, waiter: ControlWaiter): void {
    const list = waiters.get(slot);
    if (list) list.push(waiter);
    else waiters.set(slot, [waiter]);
  }

  /**
   * The service's `getMemories`: maps each asked slot from the table. An unknown slot is
   * answered with a `map` naming no memory, which fails the request at once instead of
   * after the service's callback time limit.
   */
  #answerGetMemories(slots: unknown): void {
    if (!Array.isArray(slots) || this.isClosed) return;
    for (const slot of slots) {
      if (typeof slot !== "number") continue;
      const memory = this.#slots.get(slot);
      this.#wait(this.#mapWaiters, slot, { resolve() {}, reject() {} });
      this.#sendText({ type: "map", slot, ...(memory ? { memory: memory.id } : {}) });
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
    const request = this.#sent.get(result.id);
    if (!request) {
      this.#report(
        new NnapiError("GENERAL_FAILURE", 0, `a result for unknown request ${result.id}`),
      );
      return;
    }
    this.#sent.delete(result.id);
    this.#pumpQueue();
    if (result.status !== "NONE") {
      request.reject(
        new NnapiError(result.status, 0, result.message || `burst request failed`, {
          body: {
            status: result.status,
            message: result.message,
            requestId: result.id,
            ...(result.outputs.length > 0
              ? {
                outputShapes: result.outputs.map((o) => ({
                  dimensions: o.dimensions,
                  isSufficient: o.isSufficient,
                })),
              }
              : {}),
          },
        }),
      );
      return;
    }
    try {
      request.resolve(this.#decode(request, result));
    } catch (error) {
      request.reject(error);
    }
  }

  #decode(request: Request, result: BurstResult): ExecutionResult {
    const outputs = result.outputs.map((output, k): ExecutionOutput => {
      const type = this.compilation.signature.outputs[k]?.type;
      if (type === undefined) {
        throw new NnapiError(
          "GENERAL_FAILURE",
          0,
          `the service returned output ${k}; the model has ${this.compilation.signature.outputs.length}`,
        );
      }
      if (request.inSlot[k]) return { dimensions: output.dimensions };
      return { dimensions: output.dimensions, data: tensorOf(type, output.bytes) };
    });
    return {
      outputs,
      outputShapes: result.outputs.map((o) => ({
        dimensions: o.dimensions,
        isSufficient: o.isSufficient,
      })),
      ...(result.timing ? { timing: result.timing } : {}),
    };
  }

  /** Sends queued requests while the window has room. */
  #pumpQueue(): void {
    while (this.#queue.length > 0 && this.#sent.size < this.#maxInFlight && !this.isClosed) {
      this.#send(this.#queue.shift()!);
    }
    if (this.inFlight < this.#maxInFlight) this.#wakeRoomWaiters();
  }

  #wakeRoomWaiters(): void {
    const waiters = this.#roomWaiters;
    this.#roomWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves when fewer than `maxInFlight` requests are pending (or the burst closed). */
  #room(): Promise<void> {
    if (this.inFlight < this.#maxInFlight || this.isClosed) return Promise.resolve();
    return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  #send(request: Request): void {
    if (!this.#socket.isOpen) {
      request.reject(this.#closedError());
      return;
    }
    this.#sent.set(request.id, request);
    this.#socket.send(request.frame);
  }

  #request(inputs: readonly BurstInput[], options: BurstComputeOptions): Request {
    const { signature } = this.compilation;
    if (inputs.length !== signature.inputs.length) {
      throw new RangeError(
        `the model has ${signature.inputs.length} inputs; ${inputs.length} were given`,
      );
    }
    const outputs = options.outputs ?? [];
    if (outputs.length > signature.outputs.length) {
      throw new RangeError(
        `the model has ${signature.outputs.length} outputs; ${outputs.length} were described`,
      );
    }
    let deadlineUs = 0;
    if (options.deadlineMs !== undefined) {
      if (!(options.deadlineMs >= 0)) {
        throw new RangeError(`deadlineMs ${options.deadlineMs} is not a non-negative number`);
      }
      deadlineUs = Math.min(MAX_UINT32, Math.max(1, Math.round(options.deadlineMs * 1000)));
    }
    const id = this.#nextId;
    this.#nextId = id === MAX_UINT32 ? 1 : id + 1;
    const described = outputs.some((o) => o !== undefined);
    const frame = encodeRequest({
      id,
      measureTiming: options.measureTiming ?? false,
      deadlineUs,
      inputs: inputs.map((input, i) => inputArgument(signature.inputs[i].type, i, input)),
      outputs: described ? signature.outputs.map((_, k) => outputArgument(k, outputs[k])) : [],
    });
    return {
      id,
      frame,
      inSlot: signature.outputs.map((_, k) => {
        const output = outputs[k];
        return output !== undefined && isSlotRegion(output);
      }),
      resolve: () => {},
      reject: () => {},
    };
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
    let request: Request;
    try {
      request = this.#request(inputs, options);
    } catch (error) {
      return Promise.reject(error);
    }
    const promise = new Promise<ExecutionResult>((resolve, reject) => {
      request.resolve = resolve;
      request.reject = reject;
    });
    if (this.#queue.length === 0 && this.#sent.size < this.#maxInFlight) this.#send(request);
    else this.#queue.push(request);
    return promise;
  }

  /**
   * Streams frames through the burst: takes the next frame only while the window has room,
   * keeps up to `maxInFlight` requests in flight, and calls `onResult` with each result in
   * frame order (awaiting it before the next). Stops at the first failure, which it throws
   * after the requests already sent have settled. Returns the number of frames computed.
   */
  async computePipelined(
    frames: Iterable<readonly BurstInput[]> | AsyncIterable<readonly BurstInput[]>,
    onResult: (result: ExecutionResult, index: number) => void | Promise<void>,
    options: BurstComputeOptions = {},
  ): Promise<number> {
    let delivered = 0;
    let failure: { error: unknown } | undefined;
    let chain = Promise.resolve();
    let index = 0;
    for await (const inputs of frames) {
      await this.#room();
      if (failure || this.isClosed) break;
      const k = index++;
      const pending = this.compute(inputs, options);
      pending.catch(() => {});
      chain = chain.then(async () => {
        let result: ExecutionResult;
        try {
          result = await pending;
        } catch (error) {
          failure ??= { error };
          return;
        }
        if (failure) return;
        try {
          await onResult(result, k);
          delivered++;
        } catch (error) {
          failure ??= { error };
        }
      });
    }
    await chain;
    if (failure) throw failure.error;
    return delivered;
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
    this.#slots.set(slot, memory);
    return new Promise((resolve, reject) => {
      this.#wait(this.#mapWaiters, slot, {
        resolve: () => resolve(),
        reject: (error) => {
          if (this.#slots.get(slot) === memory) this.#slots.delete(slot);
          reject(error);
        },
      });
      this.#sendText({ type: "map", slot, memory: memory.id });
    });
  }

  /** Evicts `slot` here and on the service; resolves once the service has freed it. */
  freeSlot(slot: number): Promise<void> {
    checkSlot("freeSlot", slot);
    if (!this.#socket.isOpen) return Promise.reject(this.#closedError());
    this.#slots.delete(slot);
    return new Promise((resolve, reject) => {
      this.#wait(this.#freeWaiters, slot, { resolve: () => resolve(), reject });
      this.#sendText({ type: "free", slot });
    });
  }

  /**
   * Closes the socket (the service then releases everything the burst held); requests still
   * pending reject. Resolves with how the socket closed.
   */
  close(code = 1000, reason = ""): Promise<BurstClose> {
    if (!this.isClosed) this.#socket.close(code, reason);
    return this.closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

/** The NNAPI status of a refused upgrade: the error body's, else the HTTP status's. */
function refusal(path: string, refused: UpgradeRefused): NnapiError {
  let body: unknown = refused.body;
  try {
    body = JSON.parse(refused.body);
  } catch {
    // Not an error body of the service: keep the text.
  }
  const fields = typeof body === "object" && body !== null
    ? body as { status?: unknown; message?: unknown }
    : {};
  const http = refused.httpStatus;
  const status = (ERROR_STATUSES as readonly unknown[]).includes(fields.status)
    ? fields.status as ErrorStatus
    : http === 401 || http === 403
    ? "UNAUTHORIZED"
    : http === 404
    ? "NOT_FOUND"
    : http >= 400 && http < 500
    ? "INVALID_ARGUMENT"
    : "GENERAL_FAILURE";
  const message = typeof fields.message === "string"
    ? fields.message
    : `GET ${path}: the WebSocket upgrade was refused with HTTP ${http}`;
  return new NnapiError(status, http, message, { body });
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
