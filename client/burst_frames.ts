/**
 * The burst wire format (docs/burst-protocol.md): the frame layout, and the client's half,
 * EXECUTE frames out and RESULT frames in. Kept with the SDK (which imports nothing outside
 * `client/`); the service's half (`driver/burst/protocol.ts`) builds on this file.
 */
import type { ErrorStatus } from "./vocabulary.ts";

/** Frame type of a request (client to service). */
export const EXECUTE_FRAME = 0x01;
/** Frame type of a result (service to client). */
export const RESULT_FRAME = 0x81;
/** Request flag: measure timing. */
export const FLAG_MEASURE_TIMING = 0x01;
/** Rank value meaning "no dimensions given". */
export const NO_DIMENSIONS = 0xff;
/**
 * The longest frame a burst carries, either way: the longest WebSocket message Deno (2.9)
 * accepts, 64 MiB, as a server and as a client. A longer one ends the connection (and every
 * request on it), so neither side sends one: the SDK refuses such a request, the service such
 * a result, each alone; larger tensors go through memories (slots).
 */
export const MAX_FRAME_BYTES = 64 * 1024 * 1024;
/** The bytes of an inline output in a request: none (one shared empty array: each costs). */
export const NO_BYTES = new Uint8Array(0);

/** NNAPI HAL `ErrorStatus` by the code result frames carry (NONE = 0). */
export const STATUS_NAMES: readonly ("NONE" | ErrorStatus)[] = [
  "NONE",
  "DEVICE_UNAVAILABLE",
  "GENERAL_FAILURE",
  "OUTPUT_INSUFFICIENT_SIZE",
  "INVALID_ARGUMENT",
  "MISSED_DEADLINE_TRANSIENT",
  "MISSED_DEADLINE_PERSISTENT",
  "RESOURCE_EXHAUSTED_TRANSIENT",
  "RESOURCE_EXHAUSTED_PERSISTENT",
  "NOT_FOUND",
  "UNAUTHORIZED",
];

/** One argument of an EXECUTE frame. */
export type BurstArgument =
  | { kind: "inline"; bytes: Uint8Array; dimensions?: number[] }
  | { kind: "slot"; slot: number; offset: number; length: number; dimensions?: number[] }
  | { kind: "omitted" };

/** What an EXECUTE frame carries. */
export interface BurstRequest {
  id: number;
  measureTiming: boolean;
  /** Microseconds from receipt; 0 = none. */
  deadlineUs: number;
  inputs: BurstArgument[];
  /** Outputs: inline (bytes ignored) or a memory slot region. */
  outputs: BurstArgument[];
}

/** One output of a RESULT frame. */
export interface ResultOutput {
  dimensions: number[];
  isSufficient: boolean;
  /** Inline data; empty when written to a slot or on failure. */
  bytes: Uint8Array;
}

/** A decoded RESULT frame. */
export interface BurstResult {
  id: number;
  status: "NONE" | ErrorStatus;
  message: string;
  outputs: ResultOutput[];
  timing?: { onDeviceUs: number; inDriverUs: number };
}

/** A RESULT frame that cannot be decoded. */
class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FrameError";
  }
}

const KIND_CODES = { inline: 0, slot: 1, omitted: 2 } as const;
/** Argument kinds by their code. */
export const KINDS = ["inline", "slot", "omitted"] as const;

/** `n` rounded up to a multiple of 8 (fields and data are 8-byte aligned). */
export function pad8(n: number): number {
  return (n + 7) & ~7;
}

function argumentSize(arg: BurstArgument): number {
  const rank = arg.kind !== "omitted" ? arg.dimensions?.length ?? 0 : 0;
  const data = arg.kind === "inline" ? pad8(arg.bytes.byteLength) : 0;
  return pad8(16 + 4 * rank) + data;
}

function writeArgument(view: DataView, bytes: Uint8Array, at: number, arg: BurstArgument): number {
  const dims = arg.kind !== "omitted" ? arg.dimensions : undefined;
  view.setUint8(at, KIND_CODES[arg.kind]);
  view.setUint8(at + 1, dims ? dims.length : NO_DIMENSIONS);
  if (arg.kind === "inline") view.setUint32(at + 4, arg.bytes.byteLength, true);
  if (arg.kind === "slot") {
    view.setUint32(at + 4, arg.slot, true);
    view.setUint32(at + 8, arg.offset, true);
    view.setUint32(at + 12, arg.length, true);
  }
  dims?.forEach((d, i) => view.setUint32(at + 16 + 4 * i, d, true));
  let next = at + pad8(16 + 4 * (dims?.length ?? 0));
  if (arg.kind === "inline") {
    bytes.set(arg.bytes, next);
    next += pad8(arg.bytes.byteLength);
  }
  return next;
}

/** Encodes an EXECUTE frame (inline outputs carry no bytes). */
export function encodeRequest(request: BurstRequest): Uint8Array<ArrayBuffer> {
  const outputs = request.outputs.map((a) => a.kind === "inline" ? { ...a, bytes: NO_BYTES } : a);
  const all = [...request.inputs, ...outputs];
  const bytes = new Uint8Array(16 + all.reduce((n, a) => n + argumentSize(a), 0));
  const view = new DataView(bytes.buffer);
  view.setUint8(0, EXECUTE_FRAME);
  view.setUint8(1, request.measureTiming ? FLAG_MEASURE_TIMING : 0);
  view.setUint16(2, request.inputs.length, true);
  view.setUint32(4, request.id, true);
  view.setUint16(8, request.outputs.length, true);
  view.setUint32(12, request.deadlineUs, true);
  let at = 16;
  for (const arg of all) at = writeArgument(view, bytes, at, arg);
  return bytes;
}

/** Decodes a RESULT frame; output bytes are views into `bytes`. Throws on a malformed frame. */
export function decodeResult(bytes: Uint8Array): BurstResult {
  if (bytes.byteLength < 32) throw new FrameError("a result frame is at least 32 bytes");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint8(0) !== RESULT_FRAME) throw new FrameError("not a result frame");
  const status = STATUS_NAMES[view.getUint8(1)];
  if (!status) throw new FrameError(`unknown status code ${view.getUint8(1)}`);
  const count = view.getUint16(2, true);
  const onDeviceUs = view.getFloat64(8, true);
  const inDriverUs = view.getFloat64(16, true);
  const messageLength = view.getUint32(24, true);
  const message = messageLength === 0
    ? ""
    : new TextDecoder().decode(bytes.subarray(32, 32 + messageLength));
  let at = 32 + pad8(messageLength);
  const outputs: ResultOutput[] = [];
  for (let k = 0; k < count; k++) {
    const rank = view.getUint8(at + 1);
    const length = view.getUint32(at + 4, true);
    const dimensions = new Array<number>(rank);
    for (let i = 0; i < rank; i++) dimensions[i] = view.getUint32(at + 8 + 4 * i, true);
    const isSufficient = view.getUint8(at) === 1;
    at += pad8(8 + 4 * rank);
    outputs.push({ dimensions, isSufficient, bytes: bytes.subarray(at, at + length) });
    at += pad8(length);
  }
  return {
    id: view.getUint32(4, true),
    status,
    message,
    outputs,
    ...(onDeviceUs >= 0 ? { timing: { onDeviceUs, inDriverUs } } : {}),
  };
}
