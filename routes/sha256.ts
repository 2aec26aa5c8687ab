/**
 * SHA-256 (FIPS 180-4) of a string's UTF-8 bytes, at once and into the caller's array: the
 * bearer key of every request of a service with keys is hashed (routes/auth.ts). Web
 * Crypto's `digest` answers through a thread pool (30-45 µs here), and the runtime's
 * `node:crypto` hash, 2 µs called in a loop, cost a tiny execution about 11 µs of the serving
 * thread under load (the garbage of its hash object and stream state); this one works in
 * arrays made once, in time that depends on the input's length only.
 */

/** The first `count` primes. */
function primes(count: number): number[] {
  const found: number[] = [];
  for (let n = 2; found.length < count; n++) {
    if (found.every((p) => n % p !== 0)) found.push(n);
  }
  return found;
}

/** The first 32 bits of the fractional part of `x`. */
function fraction32(x: number): number {
  return ((x - Math.floor(x)) * 2 ** 32) >>> 0;
}

const PRIMES = primes(64);
/** The round constants: the cube roots of the first 64 primes, fractional parts. */
const K = Uint32Array.from(PRIMES, (p) => fraction32(Math.cbrt(p)));
/** The initial hash: the square roots of the first 8 primes, fractional parts. */
const H0 = Uint32Array.from(PRIMES.slice(0, 8), (p) => fraction32(Math.sqrt(p)));

const W = new Uint32Array(64);
const H = new Uint32Array(8);
const encoder = new TextEncoder();
/** The message with its padding, grown for longer inputs (64-byte blocks). */
let message = new Uint8Array(256);

function rotr(x: number, n: number): number {
  return (x >>> n) | (x << (32 - n));
}

/** Mixes the 64-byte block at `at` of the message into H. */
function compress(at: number): void {
  const m = message;
  for (let t = 0; t < 16; t++) {
    const i = at + 4 * t;
    W[t] = (m[i] << 24) | (m[i + 1] << 16) | (m[i + 2] << 8) | m[i + 3];
  }
  for (let t = 16; t < 64; t++) {
    const w15 = W[t - 15];
    const w2 = W[t - 2];
    const s0 = rotr(w15, 7) ^ rotr(w15, 18) ^ (w15 >>> 3);
    const s1 = rotr(w2, 17) ^ rotr(w2, 19) ^ (w2 >>> 10);
    W[t] = W[t - 16] + s0 + W[t - 7] + s1;
  }
  let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
  for (let t = 0; t < 64; t++) {
    const s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const choice = (e & f) ^ (~e & g);
    const t1 = (h + s1 + choice + K[t] + W[t]) | 0;
    const s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const majority = (a & b) ^ (a & c) ^ (b & c);
    const t2 = (s0 + majority) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  H[0] += a;
  H[1] += b;
  H[2] += c;
  H[3] += d;
  H[4] += e;
  H[5] += f;
  H[6] += g;
  H[7] += h;
}

/** The SHA-256 of `text`'s UTF-8 bytes, written into `out` (32 bytes) and returned. */
export function sha256(text: string, out: Uint8Array = new Uint8Array(32)): Uint8Array {
  // A UTF-16 unit takes at most 3 bytes; the padding at most 72.
  const room = text.length * 3 + 72;
  if (message.length < room) message = new Uint8Array(Math.ceil(room / 64) * 64);
  const length = encoder.encodeInto(text, message).written;
  const total = Math.ceil((length + 9) / 64) * 64;
  message[length] = 0x80;
  message.fill(0, length + 1, total - 8);
  const bits = length * 8;
  const high = Math.floor(bits / 2 ** 32);
  for (let k = 0; k < 4; k++) {
    message[total - 8 + k] = high >>> (24 - 8 * k);
    message[total - 4 + k] = bits >>> (24 - 8 * k);
  }
  H.set(H0);
  for (let at = 0; at < total; at += 64) compress(at);
  for (let i = 0; i < 8; i++) {
    out[4 * i] = H[i] >>> 24;
    out[4 * i + 1] = H[i] >>> 16;
    out[4 * i + 2] = H[i] >>> 8;
    out[4 * i + 3] = H[i];
  }
  return out;
}
