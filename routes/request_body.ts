/**
 * Request bodies read with a cap: inflated when they say `Content-Encoding: gzip` or
 * `deflate`, and refused with 413 as soon as what was read passes the limit, so neither a
 * large body nor a small compressed one that inflates to gigabytes (a "zip bomb") is ever
 * held whole.
 */
import { DriverError, invalid } from "../nnapi/errors.ts";

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
function contentEncoding(request: Request): string | undefined {
  const encoding = request.headers.get("content-encoding")?.trim().toLowerCase();
  if (!encoding || encoding === "identity") return undefined;
  if (encoding !== "gzip" && encoding !== "deflate") {
    throw invalid(`Content-Encoding ${encoding} is not supported (gzip, deflate)`);
  }
  return encoding;
}

/**
 * Whether the body may be read at once: sent as it is, with a declared length within
 * `limit` (the HTTP server reads no byte past a declared length); 413 for one past it, 400
 * for an encoding not supported. False for a body to read piece by piece ({@link cappedBody}):
 * compressed, or of no declared length.
 */
export function readableAtOnce(request: Request, limit: BodyLimit): boolean {
  return contentEncoding(request) === undefined && declaredWithin(request, limit);
}

/** Whether the body has a declared length within `limit` (413 past it). */
function declaredWithin(request: Request, limit: BodyLimit): boolean {
  const declared = request.headers.get("content-length");
  if (declared === null || !/^\d+$/.test(declared)) return false;
  if (Number(declared) > limit.bytes) throw pastLimit(limit, false);
  return true;
}

/**
 * The body's bytes (inflated), at most `limit.bytes` of them; 413 past that. A body
 * {@link readableAtOnce} is read at once: reading a small body piece by piece cost a tiny
 * `/v2` inference about a tenth of its throughput.
 */
export async function cappedBody(
  request: Request,
  limit: BodyLimit,
): Promise<Uint8Array<ArrayBuffer>> {
  const encoding = contentEncoding(request);
  const identity = encoding === undefined;
  if (identity && declaredWithin(request, limit)) {
    return new Uint8Array(await request.arrayBuffer());
  }
  if (!request.body) return new Uint8Array(0);
  const stream = identity ? request.body : request.body
    .pipeThrough(smallPieces())
    .pipeThrough(new DecompressionStream(encoding as "gzip" | "deflate"));
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      let next: ReadableStreamReadResult<Uint8Array>;
      try {
        next = await reader.read();
      } catch (error) {
        if (identity) throw error;
        throw invalid(`the body is not valid ${encoding} data`);
      }
      if (next.done) break;
      total += next.value.byteLength;
      if (total > limit.bytes) throw pastLimit(limit, !identity);
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
