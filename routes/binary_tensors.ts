/**
 * Tensors as raw bytes over HTTP, in the framing of the KServe/Triton binary tensor
 * extension: a body of `Inference-Header-Content-Length` bytes of JSON header followed by
 * the tensors' bytes, back to back, each sized by its `binary_data_size`. The framing knows
 * nothing of executions: `/v1` executions and the Open Inference Protocol both use it.
 */
import { invalid } from "../nnapi/errors.ts";

/** The header naming how many leading bytes of a body are its JSON header. */
export const INFERENCE_HEADER_LENGTH = "Inference-Header-Content-Length";

/** The media type of raw tensor bodies (and of framed ones). */
export const OCTET_STREAM = "application/octet-stream";

/**
 * Headers are padded with spaces to this many bytes, so the tensors after them start
 * aligned for every element type and a reader can view them in place.
 */
const HEADER_ALIGNMENT = 8;

/** The decoder of JSON headers and bodies, made once (a TextDecoder costs about 0.2 µs). */
const UTF8 = new TextDecoder();

/** The text of UTF-8 bytes (a JSON header or body), by one decoder made once. */
export function utf8Text(bytes: Uint8Array): string {
  return UTF8.decode(bytes);
}

/** Bodies whose tensors total fewer bytes than this are sent as one buffer, not a stream. */
const STREAM_THRESHOLD = 64 * 1024;

/** A framed body: its parsed JSON header and the bytes after it. */
export interface FramedBody {
  header: unknown;
  binary: Uint8Array;
}

/**
 * Splits a framed body at the length the header names. The bytes after the header are a
 * view of `body`, not a copy.
 */
export function splitFramedBody(
  body: ArrayBuffer,
  headerLength: string,
  maxHeaderBytes: number,
): FramedBody {
  const length = Number(headerLength);
  if (!/^\d+$/.test(headerLength.trim()) || length > body.byteLength) {
    throw invalid(
      `${INFERENCE_HEADER_LENGTH} '${headerLength}' is not a byte count within the ` +
        `${body.byteLength}-byte body`,
    );
  }
  if (length > maxHeaderBytes) {
    throw invalid(
      `the JSON header (${length} bytes) is larger than ${maxHeaderBytes} bytes ` +
        "(NNSERVE_MAX_JSON_BYTES); tensors belong in the binary part",
    );
  }
  const text = utf8Text(new Uint8Array(body, 0, length));
  let header: unknown;
  try {
    header = JSON.parse(text);
  } catch (error) {
    throw invalid(
      `the first ${length} bytes (${INFERENCE_HEADER_LENGTH}) are not JSON: ` +
        (error as Error).message,
    );
  }
  return { header, binary: new Uint8Array(body, length) };
}

/** Hands out the binary part of a framed body tensor by tensor, in order. */
export class BinarySections {
  readonly #bytes: Uint8Array;
  #offset = 0;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** The next `size` bytes (a view), for the field at `path`. */
  take(size: number, path: (string | number)[]): Uint8Array {
    const left = this.#bytes.byteLength - this.#offset;
    if (size > left) {
      throw invalid(
        `${path.join(".")}: binary_data_size ${size} runs past the end of the binary data ` +
          `(${left} bytes left)`,
        { path },
      );
    }
    const section = this.#bytes.subarray(this.#offset, this.#offset + size);
    this.#offset += size;
    return section;
  }

  /** Fails when bytes are left that no tensor claimed: the sizes and the body disagree. */
  finish(): void {
    const left = this.#bytes.byteLength - this.#offset;
    if (left > 0) {
      throw invalid(
        `${left} bytes of binary data follow the last tensor: the binary_data_size ` +
          "values do not add up to the body",
      );
    }
  }
}

/**
 * The JSON header's bytes, padded with spaces (still valid JSON) to a multiple of
 * HEADER_ALIGNMENT so the tensors after it are aligned.
 */
export function encodeHeader(header: unknown): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.byteLength / HEADER_ALIGNMENT) * HEADER_ALIGNMENT;
  if (padded === json.byteLength) return json;
  const bytes = new Uint8Array(padded).fill(0x20);
  bytes.set(json);
  return bytes;
}

/**
 * A framed response: the JSON header then the tensors' bytes, with
 * `Inference-Header-Content-Length`. Large tensors are streamed from where they are
 * rather than copied into one buffer.
 */
export function framedResponse(
  header: unknown,
  tensors: readonly Uint8Array[],
  headers: Record<string, string> = {},
): Response {
  const head = encodeHeader(header);
  const tensorBytes = tensors.reduce((sum, t) => sum + t.byteLength, 0);
  const length = head.byteLength + tensorBytes;
  const init = {
    status: 200,
    headers: {
      ...headers,
      "content-type": OCTET_STREAM,
      "content-length": String(length),
      [INFERENCE_HEADER_LENGTH]: String(head.byteLength),
    },
  };
  const parts = [head, ...tensors];
  if (tensorBytes < STREAM_THRESHOLD) {
    const body = new Uint8Array(length);
    let at = 0;
    for (const part of parts) {
      body.set(part, at);
      at += part.byteLength;
    }
    return new Response(body, init);
  }
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next < parts.length) controller.enqueue(parts[next++]);
      else controller.close();
    },
  });
  return new Response(body, init);
}

/** `1,224,224,3` (a header's or the query's dimension list) as numbers. */
export function parseDimensionList(text: string, where: string): number[] {
  const trimmed = text.trim();
  if (trimmed === "") return [];
  const dims = trimmed.split(",").map((d) => d.trim());
  if (dims.some((d) => !/^\d+$/.test(d))) {
    throw invalid(`${where} '${text}' is not a comma-separated list of non-negative integers`);
  }
  return dims.map(Number);
}

/** Whether an Accept header asks for raw bytes rather than JSON. */
export function acceptsOctetStream(accept: string | undefined): boolean {
  if (!accept) return false;
  const types = accept.split(",").map((t) => t.split(";")[0].trim().toLowerCase());
  return types[0] === OCTET_STREAM;
}
