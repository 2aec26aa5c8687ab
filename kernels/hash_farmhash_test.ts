import { strictEqual } from "node:assert/strict";
import { fingerprint64 } from "./hash_farmhash.ts";

/**
 * FarmHash's self-test data (`Setup()` in farmhash.cc): a pseudorandom byte string that the
 * published `farmhashnaTest` expectations hash at offset t*t with length t.
 */
function selfTestData(length: number): Uint8Array {
  const mask = (1n << 64n) - 1n;
  const k0 = 0xc3a5c85c97cb3127n;
  const data = new Uint8Array(length);
  let a = 9n;
  let b = 777n;
  for (let i = 0; i < length; i++) {
    a = (a + b) & mask;
    b = (b + a) & mask;
    a = ((a ^ (a >> 41n)) * k0) & mask;
    b = (((b ^ (b >> 41n)) * k0) + BigInt(i)) & mask;
    data[i] = Number((b >> 37n) & 0xffn);
  }
  return data;
}

/**
 * `farmhashna::Hash64(data + t*t, t)` (= Fingerprint64) from the expected table of
 * farmhash.cc's `farmhashnaTest` (its high/low 32-bit halves joined), covering every length
 * branch: 0, 1-3, 4-7, 8-16, 17-32, 33-64 and the 64-byte block loop.
 */
const PUBLISHED: [number, string][] = [
  [0, "9ae16a3b2f90404f"],
  [1, "541150e87f415e96"],
  [2, "0f3786a4b25827c1"],
  [3, "ef923a7a1af78eab"],
  [4, "11df592596f41d88"],
  [7, "1b5a063fb4c7f9f1"],
  [8, "a0f10149a0e538d6"],
  [12, "e3f6828b6017086d"],
  [15, "44473e03be306c88"],
  [16, "03ead5f21d344056"],
  [17, "6abbfde37ee03b5b"],
  [24, "36a097aa49519d97"],
  [31, "55bdb0e71e3edebd"],
  [32, "0782fa1b08b475e7"],
  [33, "09deb3da5e16b5b8"],
  [48, "01601bbbc1db4a56"],
  [63, "a8edbff858475437"],
  [64, "def74bf4c9f1bc1b"],
  [65, "3cceab392bc39b3f"],
  [100, "05ad36f677825ce0"],
  [127, "99096f55f2e75eb0"],
  [128, "f4a9a248b462909d"],
  [129, "d4f7c858d78153b6"],
  [192, "b91cf320c999a8a1"],
  [200, "40f32eb90e5caa01"],
  [255, "74fbce74d2fe60f8"],
  [256, "7fd20f1452dfbc03"],
  [257, "d66e58c6be0bb6f5"],
  [298, "2031c84bc57a1a9f"],
];

Deno.test("fingerprint64() matches FarmHash's published farmhashna self-test values", () => {
  const data = selfTestData(298 * 298 + 298);
  for (const [t, expected] of PUBLISHED) {
    const got = fingerprint64(data.subarray(t * t, t * t + t));
    strictEqual(got.toString(16).padStart(16, "0"), expected, `length ${t}`);
  }
});

Deno.test("fingerprint64() of the empty string is the constant k2", () => {
  strictEqual(fingerprint64(new Uint8Array(0)), 0x9ae16a3b2f90404fn);
});

Deno.test("fingerprint64() reads the bytes of a view, not its whole buffer", () => {
  const data = selfTestData(1000);
  const copy = data.slice(144, 156);
  strictEqual(fingerprint64(data.subarray(144, 156)), fingerprint64(copy));
  strictEqual(fingerprint64(copy).toString(16).padStart(16, "0"), "e3f6828b6017086d");
});
