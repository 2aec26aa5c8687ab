/**
 * The binary tensor framing of execution requests and answers (the KServe/Triton binary
 * tensor extension): `Inference-Header-Content-Length` bytes of JSON header, then the
 * tensors' bytes back to back, each sized by its `parameters.binary_data_size`.
 */
import { NnapiError } from "./http.ts";

/** The header naming how many leading bytes of a framed body are its JSON header. */
export const INFERENCE_HEADER_LENGTH = "Inference-Header-Content-Length";

/** Headers are padded to this many bytes so the tensors after them are aligned. */
const ALIGNMENT = 8;

/** A framed body: the header (padded with spaces) and the tensors after it, in one buffer. */
export function frameBody(
  header: unknown,
  tensors: readonly Uint8Array[],
): { body: Uint8Array; headerLength: number } {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const headerLength = Math.ceil(json.byteLength / ALIGNMENT) * ALIGNMENT;
  const body = new Uint8Array(headerLength + tensors.reduce((n, t) => n + t.byteLength, 0));
  body.fill(0x20, json.byteLength, headerLength);
  body.set(json);
  let at = headerLength;
  for (const tensor of tensors) {
    body.set(tensor, at);
    at += tensor.byteLength;
  }
  return { body, headerLength };
}

/** A framed answer's JSON header and the bytes after it; `what` names the request. */
export async function readFramed(
  response: Response,
  what: string,
): Promise<{ header: unknown; binary: Uint8Array }> {
  const bytes = new Uint8Array(await response.arrayBuffer());
  const declared = response.headers.get(INFERENCE_HEADER_LENGTH);
  const length = Number(declared);
  const fail = (why: string, cause?: unknown) =>
    new NnapiError("GENERAL_FAILURE", response.status, `${what}: ${why}`, { cause });
  if (declared === null) {
    // Not framed: the whole answer is JSON.
    try {
      return { header: JSON.parse(new TextDecoder().decode(bytes)), binary: new Uint8Array() };
    } catch (error) {
      throw fail("the answer is neither JSON nor framed", error);
    }
  }
  if (!Number.isInteger(length) || length < 0 || length > bytes.byteLength) {
    throw fail(
      `${INFERENCE_HEADER_LENGTH} ${declared} does not fit the ${bytes.byteLength}-byte answer`,
    );
  }
  try {
    const header = JSON.parse(new TextDecoder().decode(bytes.subarray(0, length)));
    return { header, binary: bytes.subarray(length) };
  } catch (error) {
    throw fail("the framed answer's header is not JSON", error);
  }
}
