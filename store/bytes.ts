/** Byte strings: joined, and hashed (SHA-256, Web Crypto) as one. */

/** The parts one after the other, in one array. */
export function joinBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  // One part over an ordinary buffer is already joined: no copy.
  if (parts.length === 1 && parts[0].buffer instanceof ArrayBuffer) {
    return parts[0] as Uint8Array<ArrayBuffer>;
  }
  const total = parts.reduce((n, p) => n + p.byteLength, 0);
  const joined = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    joined.set(part, at);
    at += part.byteLength;
  }
  return joined;
}

/** Hex SHA-256 of byte strings taken one after the other. */
export async function sha256Hex(...parts: Uint8Array[]): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", joinBytes(parts));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}
