/**
 * The burst wire format (docs/burst-protocol.md): binary EXECUTE and RESULT frames for the
 * per-frame path, small JSON text frames for control. Shared by the server and the client
 * SDK; pure functions on bytes, no I/O.
 */
import type { ErrorStatus } from "../nnapi/errors.ts";

/** Frame type of a request (client to server). */
export const EXECUTE_FRAME = 0x01;
/** Frame type of a result (server to client). */
export const RESULT_FRAME = 0x81;
/** Request flag: measure timing. */
export const FLAG_MEASURE_TIMING = 0x01;
/** Rank value meaning "no dimensions given". */
export const NO_DIMENSIONS = 0xff;

/** NNAPI HAL `ErrorStatus` codes carried in result frames (NONE = 0). */
export const STATUS_CODES: Record<"NONE" | ErrorStatus, number> = {
  NONE: 0,
  DEVICE_UNAVAILABLE: 1,
  GENERAL_FAILURE: 2,
  OUTPUT_INSUFFICIENT_SIZE: 3,
  INVALID_ARGUMENT: 4,
  MISSED_DEADLINE_TRANSIENT: 5,
  MISSED_DEADLINE_PERSISTENT: 6,
  RESOURCE_EXHAUSTED_TRANSIENT: 7,
  RESOURCE_EXHAUSTED_PERSISTENT: 8,
  NOT_FOUND: 9,
  UNAUTHORIZED: 10,
};

const STATUS_BY_CODE = Object.fromEntries(
  Object.entries(STATUS_CODES).map(([name, code]) => [code, name]),
) as Record<number, "NONE" | ErrorStatus>;

/** One argument of an EXECUTE frame. */
export type BurstArgument =
  | { kind: "inline"; bytes: Uint8Array; dimensions?: number[] }
  | { kind: "slot"; slot: number; offset: number; length: number; dimensions?: number[] }
  | { kind: "omitted" };

/** A decoded EXECUTE frame. */
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
export interface BurstOutput {
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
  outputs: BurstOutput[];
  timing?: { onDeviceUs: number; inDriverUs: number };
}

/** A frame that cannot be decoded; `id` is set when the request id was readable. */
export class FrameError extends Error {
  constructor(message: string, readonly id?: number) {
    super(message);
    this.name = "FrameError";
  }
}

const KIND_CODES = { inline: 0, slot: 1, omitted: 2 } as const;
const KINDS = ["inline", "slot", "omitted"] as const;

function pad8(n: number): number {
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
  const outputs = request.outputs.map((a) =>
    a.kind === "inline" ? { ...a, bytes: new Uint8Array(0) } : a
  );
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

function readArgument(
  view: DataView,
  bytes: Uint8Array,
  at: number,
  id: number,
  what: string,
): { arg: BurstArgument; next: number } {
  if (at + 16 > bytes.byteLength) throw new FrameError(`${what}: frame ends early`, id);
  const kind = KINDS[view.getUint8(at)];
  if (!kind) throw new FrameError(`${what}: unknown argument kind ${view.getUint8(at)}`, id);
  const rank = view.getUint8(at + 1);
  let dimensions: number[] | undefined;
  if (rank !== NO_DIMENSIONS) {
    if (at + 16 + 4 * rank > bytes.byteLength) {
      throw new FrameError(`${what}: frame ends inside dimensions`, id);
    }
    dimensions = Array.from({ length: rank }, (_, i) => view.getUint32(at + 16 + 4 * i, true));
  }
  let next = at + pad8(16 + 4 * (rank === NO_DIMENSIONS ? 0 : rank));
  if (kind === "omitted") return { arg: { kind }, next };
  if (kind === "slot") {
    return {
      arg: {
        kind,
        slot: view.getUint32(at + 4, true),
        offset: view.getUint32(at + 8, true),
        length: view.getUint32(at + 12, true),
        dimensions,
      },
      next,
    };
  }
  const length = view.getUint32(at + 4, true);
  if (next + length > bytes.byteLength) {
    throw new FrameError(`${what}: ${length} data bytes announced, frame ends early`, id);
  }
  const data = bytes.subarray(next, next + length);
  next += pad8(length);
  return { arg: { kind, bytes: data, dimensions }, next };
}

/** Decodes an EXECUTE frame; inline input bytes are views into `bytes` (no copy). */
export function decodeRequest(bytes: Uint8Array): BurstRequest {
  if (bytes.byteLength < 8) throw new FrameError(`a ${bytes.byteLength}-byte frame is too short`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const id = view.getUint32(4, true);
  if (view.getUint8(0) !== EXECUTE_FRAME) {
    throw new FrameError(`unknown frame type 0x${view.getUint8(0).toString(16)}`, id);
  }
  if (bytes.byteLength < 16) throw new FrameError("the frame header is cut short", id);
  const inputCount = view.getUint16(2, true);
  const outputCount = view.getUint16(8, true);
  let at = 16;
  const inputs: BurstArgument[] = [];
  for (let k = 0; k < inputCount; k++) {
    const { arg, next } = readArgument(view, bytes, at, id, `input ${k}`);
    inputs.push(arg);
    at = next;
  }
  const outputs: BurstArgument[] = [];
  for (let k = 0; k < outputCount; k++) {
    const { arg, next } = readArgument(view, bytes, at, id, `output ${k}`);
    if (arg.kind === "omitted") throw new FrameError(`output ${k} cannot be omitted`, id);
    outputs.push(arg);
    at = next;
  }
  return {
    id,
    measureTiming: (view.getUint8(1) & FLAG_MEASURE_TIMING) !== 0,
    deadlineUs: view.getUint32(12, true),
    inputs,
    outputs,
  };
}

/** Encodes a RESULT frame. */
export function encodeResult(result: BurstResult): Uint8Array<ArrayBuffer> {
  const message = new TextEncoder().encode(result.message);
  let size = 32 + pad8(message.byteLength);
  for (const o of result.outputs) {
    size += pad8(8 + 4 * o.dimensions.length) + pad8(o.bytes.byteLength);
  }
  const bytes = new Uint8Array(size);
  const view = new DataView(bytes.buffer);
  view.setUint8(0, RESULT_FRAME);
  view.setUint8(1, STATUS_CODES[result.status]);
  view.setUint16(2, result.outputs.length, true);
  view.setUint32(4, result.id, true);
  view.setFloat64(8, result.timing?.onDeviceUs ?? -1, true);
  view.setFloat64(16, result.timing?.inDriverUs ?? -1, true);
  view.setUint32(24, message.byteLength, true);
  bytes.set(message, 32);
  let at = 32 + pad8(message.byteLength);
  for (const o of result.outputs) {
    view.setUint8(at, o.isSufficient ? 1 : 0);
    view.setUint8(at + 1, o.dimensions.length);
    view.setUint32(at + 4, o.bytes.byteLength, true);
    o.dimensions.forEach((d, i) => view.setUint32(at + 8 + 4 * i, d, true));
    at += pad8(8 + 4 * o.dimensions.length);
    bytes.set(o.bytes, at);
    at += pad8(o.bytes.byteLength);
  }
  return bytes;
}

/** Decodes a RESULT frame; output bytes are views into `bytes`. */
export function decodeResult(bytes: Uint8Array): BurstResult {
  if (bytes.byteLength < 32) throw new FrameError("a result frame is at least 32 bytes");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint8(0) !== RESULT_FRAME) throw new FrameError("not a result frame");
  const status = STATUS_BY_CODE[view.getUint8(1)];
  if (!status) throw new FrameError(`unknown status code ${view.getUint8(1)}`);
  const count = view.getUint16(2, true);
  const onDeviceUs = view.getFloat64(8, true);
  const inDriverUs = view.getFloat64(16, true);
  const messageLength = view.getUint32(24, true);
  const message = new TextDecoder().decode(bytes.subarray(32, 32 + messageLength));
  let at = 32 + pad8(messageLength);
  const outputs: BurstOutput[] = [];
  for (let k = 0; k < count; k++) {
    const rank = view.getUint8(at + 1);
    const length = view.getUint32(at + 4, true);
    const dimensions = Array.from({ length: rank }, (_, i) => view.getUint32(at + 8 + 4 * i, true));
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
