import {
  frexp,
  multiplyByQuantizedMultiplier,
  quantizeMultiplier,
  quantizeMultiplierSmallerThanOne,
  roundingDivideByPOT,
  saturatingRoundingDoublingHighMul,
} from "./fixed_point.ts";

function assertEquals(actual: unknown, expected: unknown, what: string): void {
  if (actual !== expected) throw new Error(`${what}: expected ${expected}, got ${actual}`);
}

function referenceHighMul(a: number, b: number): number {
  if (a === -2147483648 && b === -2147483648) return 2147483647;
  const ab = BigInt(a) * BigInt(b);
  const nudge = ab >= 0n ? 1n << 30n : 1n - (1n << 30n);
  return Number((ab + nudge) / (1n << 31n));
}

Deno.test("saturatingRoundingDoublingHighMul() matches 64-bit integer arithmetic", () => {
  let seed = 12345;
  const next = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) | 0;
    return seed;
  };
  const edges = [0, 1, -1, 2147483647, -2147483648, 1073741824, -1073741824, 65535, -65536];
  for (const a of edges) {
    for (const b of edges) {
      assertEquals(saturatingRoundingDoublingHighMul(a, b), referenceHighMul(a, b), `${a}*${b}`);
    }
  }
  for (let i = 0; i < 20000; i++) {
    const a = next();
    const b = i % 3 === 0 ? next() >> (i % 20) : next();
    assertEquals(saturatingRoundingDoublingHighMul(a, b), referenceHighMul(a, b), `${a}*${b}`);
  }
});

Deno.test("roundingDivideByPOT() rounds halves away from zero", () => {
  assertEquals(roundingDivideByPOT(5, 1), 3, "5/2");
  assertEquals(roundingDivideByPOT(-5, 1), -3, "-5/2");
  assertEquals(roundingDivideByPOT(4, 1), 2, "4/2");
  assertEquals(roundingDivideByPOT(-6, 2), -2, "-6/4");
  assertEquals(roundingDivideByPOT(7, 0), 7, "7/1");
});

Deno.test("quantizeMultiplier() keeps the mantissa in Q31 and the exponent as shift", () => {
  const q = quantizeMultiplier(0.5);
  assertEquals(q.multiplier, 1073741824, "0.5 multiplier");
  assertEquals(q.shift, 0, "0.5 shift");
  const small = quantizeMultiplierSmallerThanOne(0.25);
  assertEquals(small?.multiplier, 1073741824, "0.25 multiplier");
  assertEquals(small?.shift, 1, "0.25 right shift");
  assertEquals(quantizeMultiplierSmallerThanOne(1.5), null, "1.5 rejected");
  assertEquals(multiplyByQuantizedMultiplier(1000, q.multiplier, q.shift), 500, "1000*0.5");
  const big = quantizeMultiplier(3);
  assertEquals(multiplyByQuantizedMultiplier(100, big.multiplier, big.shift), 300, "100*3");
  assertEquals(frexp(8).exponent, 4, "frexp(8)");
  assertEquals(frexp(8).mantissa, 0.5, "frexp(8) mantissa");
});
