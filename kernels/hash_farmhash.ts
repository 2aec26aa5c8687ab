/**
 * FarmHash `Fingerprint64` (= `farmhashna::Hash64`, Geoff Pike's FarmHash, MIT licence), the
 * portable, forever-fixed 64-bit fingerprint that NNAPI's LSH_PROJECTION hashes its keys
 * with. Computed with BigInt, masked to 64 bits after every wrapping operation; multi-byte
 * words are read little-endian, as on the devices the reference runs on.
 */

const MASK = 0xffffffffffffffffn;
const K0 = 0xc3a5c85c97cb3127n;
const K1 = 0xb492b66fbe98f273n;
const K2 = 0x9ae16a3b2f90404fn;

function add(a: bigint, b: bigint): bigint {
  return (a + b) & MASK;
}

function mul(a: bigint, b: bigint): bigint {
  return (a * b) & MASK;
}

/** Right rotation of a 64-bit word (`Rotate64`). */
function rotate(value: bigint, shift: bigint): bigint {
  return shift === 0n ? value : ((value >> shift) | (value << (64n - shift))) & MASK;
}

function shiftMix(value: bigint): bigint {
  return value ^ (value >> 47n);
}

function hashLen16(u: bigint, v: bigint, m: bigint): bigint {
  let a = mul(u ^ v, m);
  a ^= a >> 47n;
  let b = mul(v ^ a, m);
  b ^= b >> 47n;
  return mul(b, m);
}

/** Little-endian word readers over one byte string. */
class Reader {
  readonly #view: DataView;

  constructor(bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  u64(offset: number): bigint {
    return this.#view.getBigUint64(offset, true);
  }

  u32(offset: number): bigint {
    return BigInt(this.#view.getUint32(offset, true));
  }

  u8(offset: number): bigint {
    return BigInt(this.#view.getUint8(offset));
  }
}

function hashLen0to16(s: Reader, len: number): bigint {
  const n = BigInt(len);
  if (len >= 8) {
    const m = add(K2, n * 2n);
    const a = add(s.u64(0), K2);
    const b = s.u64(len - 8);
    const c = add(mul(rotate(b, 37n), m), a);
    const d = mul(add(rotate(a, 25n), b), m);
    return hashLen16(c, d, m);
  }
  if (len >= 4) {
    const m = add(K2, n * 2n);
    const a = s.u32(0);
    return hashLen16(add(n, a << 3n), s.u32(len - 4), m);
  }
  if (len > 0) {
    const a = s.u8(0);
    const b = s.u8(len >> 1);
    const c = s.u8(len - 1);
    // uint32 arithmetic in the original; these sums cannot overflow 32 bits.
    const y = a + (b << 8n);
    const z = n + (c << 2n);
    return mul(shiftMix(mul(y, K2) ^ mul(z, K0)), K2);
  }
  return K2;
}

function hashLen17to32(s: Reader, len: number): bigint {
  const m = add(K2, BigInt(len) * 2n);
  const a = mul(s.u64(0), K1);
  const b = s.u64(8);
  const c = mul(s.u64(len - 8), m);
  const d = mul(s.u64(len - 16), K2);
  return hashLen16(
    add(add(rotate(add(a, b), 43n), rotate(c, 30n)), d),
    add(add(a, rotate(add(b, K2), 18n)), c),
    m,
  );
}

function hashLen33to64(s: Reader, len: number): bigint {
  const m = add(K2, BigInt(len) * 2n);
  const a = mul(s.u64(0), K2);
  const b = s.u64(8);
  const c = mul(s.u64(len - 8), m);
  const d = mul(s.u64(len - 16), K2);
  const y = add(add(rotate(add(a, b), 43n), rotate(c, 30n)), d);
  const z = hashLen16(y, add(add(a, rotate(add(b, K2), 18n)), c), m);
  const e = mul(s.u64(16), m);
  const f = s.u64(24);
  const g = mul(add(y, s.u64(len - 32)), m);
  const h = mul(add(z, s.u64(len - 24)), m);
  return hashLen16(
    add(add(rotate(add(e, f), 43n), rotate(g, 30n)), h),
    add(add(e, rotate(add(f, a), 18n)), g),
    m,
  );
}

/** `WeakHashLen32WithSeeds` over the 32 bytes at `offset`, as a [first, second] pair. */
function weakHashLen32WithSeeds(
  s: Reader,
  offset: number,
  seedA: bigint,
  seedB: bigint,
): [bigint, bigint] {
  const w = s.u64(offset);
  const x = s.u64(offset + 8);
  const y = s.u64(offset + 16);
  const z = s.u64(offset + 24);
  let a = add(seedA, w);
  let b = rotate(add(add(seedB, a), z), 21n);
  const c = a;
  a = add(add(a, x), y);
  b = add(b, rotate(a, 44n));
  return [add(a, z), add(b, c)];
}

function hashLongerThan64(s: Reader, len: number): bigint {
  const seed = 81n;
  let x = seed;
  let y = add(mul(seed, K1), 113n);
  let z = mul(shiftMix(add(mul(y, K2), 113n)), K2);
  let v: [bigint, bigint] = [0n, 0n];
  let w: [bigint, bigint] = [0n, 0n];
  x = add(mul(x, K2), s.u64(0));

  // Whole 64-byte blocks, leaving 1 to 64 bytes, which the last 64 bytes cover.
  const end = Math.floor((len - 1) / 64) * 64;
  const last64 = len - 64;
  let p = 0;
  do {
    x = mul(rotate(add(add(add(x, y), v[0]), s.u64(p + 8)), 37n), K1);
    y = mul(rotate(add(add(y, v[1]), s.u64(p + 48)), 42n), K1);
    x ^= w[1];
    y = add(y, add(v[0], s.u64(p + 40)));
    z = mul(rotate(add(z, w[0]), 33n), K1);
    v = weakHashLen32WithSeeds(s, p, mul(v[1], K1), add(x, w[0]));
    w = weakHashLen32WithSeeds(s, p + 32, add(z, w[1]), add(y, s.u64(p + 16)));
    [z, x] = [x, z];
    p += 64;
  } while (p !== end);

  const m = add(K1, (z & 0xffn) << 1n);
  p = last64;
  w[0] = add(w[0], BigInt((len - 1) & 63));
  v[0] = add(v[0], w[0]);
  w[0] = add(w[0], v[0]);
  x = mul(rotate(add(add(add(x, y), v[0]), s.u64(p + 8)), 37n), m);
  y = mul(rotate(add(add(y, v[1]), s.u64(p + 48)), 42n), m);
  x ^= mul(w[1], 9n);
  y = add(y, add(mul(v[0], 9n), s.u64(p + 40)));
  z = mul(rotate(add(z, w[0]), 33n), m);
  v = weakHashLen32WithSeeds(s, p, mul(v[1], m), add(x, w[0]));
  w = weakHashLen32WithSeeds(s, p + 32, add(z, w[1]), add(y, s.u64(p + 16)));
  [z, x] = [x, z];
  return hashLen16(
    add(add(hashLen16(v[0], w[0], m), mul(shiftMix(y), K0)), z),
    add(hashLen16(v[1], w[1], m), x),
    m,
  );
}

/** FarmHash `Fingerprint64` of a byte string, as an unsigned 64-bit BigInt. */
export function fingerprint64(bytes: Uint8Array): bigint {
  const s = new Reader(bytes);
  const len = bytes.byteLength;
  if (len <= 16) return hashLen0to16(s, len);
  if (len <= 32) return hashLen17to32(s, len);
  if (len <= 64) return hashLen33to64(s, len);
  return hashLongerThan64(s, len);
}
