/**
 * The burst wire format for the browser: a plain-JS mirror of the client half of
 * driver/burst/protocol.ts (EXECUTE frames out, RESULT frames in). The server does not bundle
 * TypeScript, so this file is written by hand; tests/demo_browser_test.ts checks that it
 * produces and reads the same bytes as the driver's module.
 */

/** Frame type of a request (client to server). */
export const EXECUTE_FRAME = 0x01;
/** Frame type of a result (server to client). */
export const RESULT_FRAME = 0x81;
/** Request flag: measure timing. */
export const FLAG_MEASURE_TIMING = 0x01;
/** Rank value meaning "no dimensions given". */
export const NO_DIMENSIONS = 0xff;

/** NNAPI HAL `ErrorStatus` names by the code carried in result frames. */
export const STATUS_NAMES = [
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

/**
 * @typedef {{ kind: "inline", bytes: Uint8Array, dimensions?: number[] }
 *   | { kind: "slot", slot: number, offset: number, length: number, dimensions?: number[] }
 *   | { kind: "omitted" }} BurstArgument
 */

/**
 * @typedef {{ id: number, measureTiming: boolean, deadlineUs: number,
 *   inputs: BurstArgument[], outputs: BurstArgument[] }} BurstRequest
 */

/** @typedef {{ dimensions: number[], isSufficient: boolean, bytes: Uint8Array }} BurstOutput */

/**
 * @typedef {{ id: number, status: string, message: string, outputs: BurstOutput[],
 *   timing?: { onDeviceUs: number, inDriverUs: number } }} BurstResult
 */

const KIND_CODES = { inline: 0, slot: 1, omitted: 2 };

/**
 * @param {number} n
 * @returns {number}
 */
function pad8(n) {
  return (n + 7) & ~7;
}

/**
 * @param {BurstArgument} arg
 * @returns {number[] | undefined}
 */
function dimensionsOf(arg) {
  return arg.kind === "omitted" ? undefined : arg.dimensions;
}

/**
 * @param {BurstArgument} arg
 * @returns {number}
 */
function argumentSize(arg) {
  const rank = dimensionsOf(arg)?.length ?? 0;
  const data = arg.kind === "inline" ? pad8(arg.bytes.byteLength) : 0;
  return pad8(16 + 4 * rank) + data;
}

/**
 * Encodes an EXECUTE frame. Inline outputs carry no bytes: the result brings them.
 * @param {BurstRequest} request
 * @returns {Uint8Array<ArrayBuffer>}
 */
export function encodeRequest(request) {
  /** @type {BurstArgument[]} */
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
  for (const arg of all) {
    const dims = dimensionsOf(arg);
    view.setUint8(at, KIND_CODES[arg.kind]);
    view.setUint8(at + 1, dims ? dims.length : NO_DIMENSIONS);
    if (arg.kind === "inline") view.setUint32(at + 4, arg.bytes.byteLength, true);
    if (arg.kind === "slot") {
      view.setUint32(at + 4, arg.slot, true);
      view.setUint32(at + 8, arg.offset, true);
      view.setUint32(at + 12, arg.length, true);
    }
    dims?.forEach((d, i) => view.setUint32(at + 16 + 4 * i, d, true));
    at += pad8(16 + 4 * (dims?.length ?? 0));
    if (arg.kind === "inline") {
      bytes.set(arg.bytes, at);
      at += pad8(arg.bytes.byteLength);
    }
  }
  return bytes;
}

/**
 * Decodes a RESULT frame; output bytes are views into `bytes`.
 * @param {Uint8Array} bytes
 * @returns {BurstResult}
 */
export function decodeResult(bytes) {
  if (bytes.byteLength < 32) throw new Error("a result frame is at least 32 bytes");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint8(0) !== RESULT_FRAME) throw new Error("not a result frame");
  const status = STATUS_NAMES[view.getUint8(1)];
  if (!status) throw new Error(`unknown status code ${view.getUint8(1)}`);
  const count = view.getUint16(2, true);
  const onDeviceUs = view.getFloat64(8, true);
  const inDriverUs = view.getFloat64(16, true);
  const messageLength = view.getUint32(24, true);
  const message = new TextDecoder().decode(bytes.subarray(32, 32 + messageLength));
  let at = 32 + pad8(messageLength);
  /** @type {BurstOutput[]} */
  const outputs = [];
  for (let k = 0; k < count; k++) {
    if (at + 8 > bytes.byteLength) throw new Error(`output ${k}: frame ends early`);
    const rank = view.getUint8(at + 1);
    const length = view.getUint32(at + 4, true);
    if (at + pad8(8 + 4 * rank) + length > bytes.byteLength) {
      throw new Error(`output ${k}: frame ends early`);
    }
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
