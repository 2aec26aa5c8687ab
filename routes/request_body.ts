/**
 * Request bodies read with a cap: refused with 413 as soon as what was read passes the
 * limit, so neither a large body nor a small compressed one that inflates to gigabytes (a
 * "zip bomb") is ever held whole. A body that says `Content-Encoding: gzip` or `deflate` is
 * inflated once, for every route, before the route reads it ({@link inflatedRequest}).
 */
import { DriverError, invalid } from "../nnapi/errors.ts";
import { INFERENCE_HEADER_LENGTH } from "./binary_tensors.ts";
import { JSON_MEDIA_TYPE } from "./schemas.ts";

/** A byte limit and the setting that sets it, for the refusal's message. */
export interface BodyLimit {
  bytes: number;
  setting: string;
}

/** The request body limits: JSON bodies have their own, lower one. */
export interface BodyLimits {
  maxBytes: number;
  maxJsonBytes: number;
}

/** The 413 RESOURCE_EXHAUSTED_PERSISTENT of a body past the limit of its kind. */
export function bodyTooLarge(limits: BodyLimits, isJson: boolean): DriverError {
  const message = isJson
    ? `the JSON request body is larger than ${limits.maxJsonBytes} bytes (NNSERVE_MAX_JSON_BYTES); ` +
      "send large data as application/octet-stream, e.g. in a memory"
    : `the request body is larger than ${limits.maxBytes} bytes (NNSERVE_MAX_BODY_BYTES)`;
  return new DriverError("RESOURCE_EXHAUSTED_PERSISTENT", message, { limit: "body_size" });
}

/**
 * Compressed bytes a piece: deflate inflates at most about 1032 times, and an inflater hands
 * out all it inflated from a piece at once, so a piece of this size inflates to at most
 * about 8 MiB before the limit is checked again.
 */
const COMPRESSED_PIECE = 8 * 1024;

/** Cuts chunks into pieces of at most {@link COMPRESSED_PIECE} bytes. */
function smallPieces(): TransformStream<Uint8Array<ArrayBuffer>, BufferSource> {
  return new TransformStream({
    transform(chunk, controller) {
      for (let at = 0; at < chunk.byteLength; at += COMPRESSED_PIECE) {
        controller.enqueue(chunk.subarray(at, at + COMPRESSED_PIECE));
      }
    },
  });
}

/** The 413 of a body past `limit` (`inflated`: once inflated). */
function pastLimit(limit: BodyLimit, inflated: boolean): DriverError {
  return new DriverError(
    "RESOURCE_EXHAUSTED_PERSISTENT",
    `the request body is larger than ${limit.bytes} bytes` +
      `${inflated ? " once inflated" : ""} (${limit.setting})`,
    { limit: "body_size" },
  );
}

/** The body's content encoding, lower case (undefined: none); 400 for one not supported. */
function contentEncoding(request: Request): "gzip" | "deflate" | undefined {
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase();
  if (!encoding || encoding === "identity") return undefined;
  if (encoding === "gzip" || encoding === "deflate") return encoding;
  throw invalid(`Content-Encoding ${encoding} is not supported (gzip, deflate)`);
}

/**
 * Whether the body may be read at once: of a declared length within `limit` (the HTTP
 * server reads no byte past a declared length); 413 past it. False for a body to read piece
 * by piece ({@link cappedBody}): one of no declared length.
 */
export function readableAtOnce(request: Request, limit: BodyLimit): boolean {
  const declared = request.headers.get("content-length");
  if (declared === null || !/^\d+$/.test(declared)) return false;
  if (Number(declared) > limit.bytes) throw pastLimit(limit, false);
  return true;
}

/**
 * The body's bytes, at most `limit.bytes` of them; 413 past that. A body
 * {@link readableAtOnce} is read at once: reading a small body piece by piece cost a tiny
 * `/v2` inference about a tenth of its throughput.
 */
export async function cappedBody(
  request: Request,
  limit: BodyLimit,
): Promise<Uint8Array<ArrayBuffer>> {
  if (readableAtOnce(request, limit)) return new Uint8Array(await request.arrayBuffer());
  return request.body ? await readCapped(request.body, limit) : new Uint8Array(0);
}

/**
 * The limit a compressed body inflates within: the JSON limit, unless the body says it is
 * something else (a Content-Type that is not JSON, or a framed binary body), as a `/v2`
 * inference's body without a Content-Type is JSON.
 */
function inflatingLimit(request: Request, limits: BodyLimits): BodyLimit {
  const type = request.headers.get("content-type") ?? "";
  const binary = request.headers.has(INFERENCE_HEADER_LENGTH) ||
    (type !== "" && !JSON_MEDIA_TYPE.test(type));
  return binary
    ? { bytes: limits.maxBytes, setting: "NNSERVE_MAX_BODY_BYTES" }
    : { bytes: limits.maxJsonBytes, setting: "NNSERVE_MAX_JSON_BYTES" };
}

/**
 * The request as every route reads it: a body sent with `Content-Encoding: gzip` or
 * `deflate` inflated (piece by piece, within the limit of its kind: a small body that
 * inflates to gigabytes is refused with 413 as it passes the limit, never held whole), its
 * length declared and the encoding gone; any other request as it is. 400 for an encoding
 * not supported, or a body that is not the encoding it says.
 */
export async function inflatedRequest(request: Request, limits: BodyLimits): Promise<Request> {
  const encoding = contentEncoding(request);
  if (encoding === undefined || !request.body) return request;
  const limit = inflatingLimit(request, limits);
  const bytes = await readCapped(
    request.body.pipeThrough(smallPieces()).pipeThrough(new DecompressionStream(encoding)),
    limit,
    encoding,
  );
  const headers = new Headers(request.headers);
  headers.delete("content-encoding");
  headers.set("content-length", String(bytes.byteLength));
  return new Request(request.url, {
    method: request.method,
    headers,
    body: bytes,
    signal: request.signal,
  });
}

/**
 * Reads `stream` whole into a buffer of exactly its size, refusing with 413 as soon as it
 * passes `limit`; `encoding` names what it inflates (a read that fails is then the data's
 * fault: 400).
 */
async function readCapped(
  stream: ReadableStream<Uint8Array>,
  limit: BodyLimit,
  encoding?: "gzip" | "deflate",
): Promise<Uint8Array<ArrayBuffer>> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (error) {
        if (encoding === undefined) throw error;
        throw invalid(`the body is not valid ${encoding} data`);
      }
      if (next.done) break;
      total += next.value.byteLength;
      if (total > limit.bytes) throw pastLimit(limit, encoding !== undefined);
      chunks.push(next.value);
    }
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
  // Joined into a buffer of exactly the body's size, even from one chunk (not joinBytes,
  // which hands one chunk back as it is): callers read `bytes.buffer` as the body.
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
