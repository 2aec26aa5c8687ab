/**
 * State keys as bytes whose byte order is the keys' order (as Deno KV orders them: strings
 * before numbers, strings by UTF-8, numbers numerically), so a database orders and ranges
 * them with a plain index: a prefix's entries are the keys between the prefix's bytes and
 * those bytes followed by 0xFF. Each part is self-delimiting (a tuple encoding).
 */
import type { StateKey, StateKeyPart } from "./state_store.ts";

const STRING = 0x02;
const NUMBER = 0x21;
/** Greater than every part's first byte: the end of a prefix's range. */
const END = 0xff;

/** The bytes of a key. */
export function encodeKey(key: StateKey): Uint8Array {
  const bytes: number[] = [];
  for (const part of key) {
    if (typeof part === "string") {
      bytes.push(STRING);
      // 0x00 ends the string; a 0x00 inside it is written 0x00 0xFF.
      for (const b of new TextEncoder().encode(part)) {
        bytes.push(b);
        if (b === 0) bytes.push(0xff);
      }
      bytes.push(0);
    } else if (typeof part === "number") {
      bytes.push(NUMBER);
      const view = new DataView(new ArrayBuffer(8));
      view.setFloat64(0, part);
      const raw = new Uint8Array(view.buffer);
      // Negative numbers: every bit flipped; others: the sign bit set. Bytes then order.
      if (raw[0] & 0x80) { for (let i = 0; i < 8; i++) raw[i] ^= 0xff; }
      else raw[0] ^= 0x80;
      bytes.push(...raw);
    } else {
      throw new TypeError(`a state key part is a string or a number, not ${typeof part}`);
    }
  }
  return new Uint8Array(bytes);
}

/** The key of some bytes {@link encodeKey} wrote. */
export function decodeKey(bytes: Uint8Array): StateKey {
  const parts: StateKeyPart[] = [];
  let at = 0;
  while (at < bytes.length) {
    const tag = bytes[at++];
    if (tag === STRING) {
      const text: number[] = [];
      while (bytes[at] !== 0 || bytes[at + 1] === 0xff) {
        text.push(bytes[at]);
        at += bytes[at] === 0 ? 2 : 1;
      }
      at++;
      parts.push(new TextDecoder().decode(new Uint8Array(text)));
    } else if (tag === NUMBER) {
      const raw = bytes.slice(at, at + 8);
      if (raw[0] & 0x80) raw[0] ^= 0x80;
      else for (let i = 0; i < 8; i++) raw[i] ^= 0xff;
      parts.push(new DataView(raw.buffer).getFloat64(0));
      at += 8;
    } else {
      throw new TypeError(`not a state key: tag ${tag} at byte ${at - 1}`);
    }
  }
  return parts;
}

/** The bytes after every key under `prefix` (exclusive end of its range). */
export function prefixEnd(prefix: StateKey): Uint8Array {
  const bytes = encodeKey(prefix);
  const end = new Uint8Array(bytes.length + 1);
  end.set(bytes);
  end[bytes.length] = END;
  return end;
}
