/**
 * The service's half of the burst wire format (docs/burst-protocol.md): EXECUTE frames in,
 * RESULT frames out. The layout and the client's half live with the SDK
 * (`client/burst_frames.ts`, which imports nothing outside `client/`); pure functions on
 * bytes, no I/O.
 */
import type { ErrorStatus } from "../../nnapi/errors.ts";
import {
  type BurstArgument,
  type BurstRequest,
  type BurstResult,
  EXECUTE_FRAME,
  FLAG_MEASURE_TIMING,
  KINDS,
  NO_DIMENSIONS,
  pad8,
  RESULT_FRAME,
  STATUS_NAMES,
} from "../../client/burst_frames.ts";

export {
  type BurstArgument,
  type BurstRequest,
  type BurstResult,
  decodeResult,
  encodeRequest,
  EXECUTE_FRAME,
  FLAG_MEASURE_TIMING,
  MAX_FRAME_BYTES,
  NO_DIMENSIONS,
  RESULT_FRAME,
  type ResultOutput as BurstOutput,
} from "../../client/burst_frames.ts";

/** NNAPI HAL `ErrorStatus` codes carried in result frames (NONE = 0). */
export const STATUS_CODES = Object.fromEntries(
  STATUS_NAMES.map((name, code) => [name, code]),
) as Record<"NONE" | ErrorStatus, number>;

/** A frame that cannot be decoded; `id` is set when the request id was readable. */
export class FrameError extends Error {
  constructor(message: string, readonly id?: number) {
    super(message);
    this.name = "FrameError";
  }
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
    dimensions = new Array<number>(rank);
    for (let i = 0; i < rank; i++) dimensions[i] = view.getUint32(at + 16 + 4 * i, true);
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

const UTF8 = new TextEncoder();
const NO_BYTES = new Uint8Array(0);

/** Encodes a RESULT frame. */
export function encodeResult(result: BurstResult): Uint8Array<ArrayBuffer> {
  const message = result.message === "" ? NO_BYTES : UTF8.encode(result.message);
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
