/**
 * Base64 of bytes, with the built-in `Uint8Array.prototype.toBase64` / `Uint8Array.fromBase64`
 * where the runtime has them (Deno, recent browsers) and a portable fallback where it does not
 * (Node 20 and 22), so the SDK runs unchanged on all of them.
 */

type Base64Bytes = Uint8Array & { toBase64?: () => string };
type Base64Constructor = typeof Uint8Array & { fromBase64?: (text: string) => Uint8Array };

const CHUNK = 0x8000;

/** The base64 of `bytes`. */
export function toBase64(bytes: Uint8Array): string {
  const native = (bytes as Base64Bytes).toBase64;
  if (typeof native === "function") return native.call(bytes);
  let binary = "";
  for (let i = 0; i < bytes.length; i += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(binary);
}

/** The bytes of base64 `text` (a fresh array). */
export function fromBase64(text: string): Uint8Array {
  const native = (Uint8Array as Base64Constructor).fromBase64;
  if (typeof native === "function") return native(text);
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}
