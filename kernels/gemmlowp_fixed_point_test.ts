import { ok, strictEqual } from "node:assert/strict";
import {
  calculateInputRadius,
  expOnNegativeValues,
  fixedLogistic,
  fixedTanh,
  getInvSqrtQuantizedMultiplierExp,
  getReciprocal,
  oneOverOnePlusXForXIn01,
  rescale,
  roundingHalfSum,
  saturatingRoundingMultiplyByPOT,
} from "./gemmlowp_fixed_point.ts";

const Q31 = 2 ** 31;

// Golden values below come from gemmlowp's fixedpoint.h compiled with g++.

Deno.test("expOnNegativeValues() returns exactly gemmlowp's results", () => {
  strictEqual(expOnNegativeValues(0, 5), 2147483647);
  strictEqual(expOnNegativeValues(-1, 5), 2147483124);
  strictEqual(expOnNegativeValues(-1181686489, 5), 48);
  strictEqual(expOnNegativeValues(-2016850622, 5), 0);
});

Deno.test("expOnNegativeValues() approximates exp on Q5.26 inputs", () => {
  for (const x of [-0.1, -0.25, -1, -2.5, -7]) {
    const got = expOnNegativeValues(Math.round(x * 2 ** 26), 5) / Q31;
    ok(Math.abs(got - Math.exp(x)) < 1e-6, `exp(${x}) = ${got}`);
  }
});

Deno.test("fixedLogistic() and fixedTanh() return exactly gemmlowp's results", () => {
  strictEqual(fixedLogistic(0, 4), 1 << 30);
  strictEqual(fixedLogistic(-1, 4), 1073741699);
  strictEqual(fixedLogistic(135661445, 4), 1574466738);
  strictEqual(fixedLogistic(-273966331, 4), 246839841);
  strictEqual(fixedTanh(0, 4), 0);
  strictEqual(fixedTanh(-1, 4), -260);
  strictEqual(fixedTanh(-847888044, 4), -2147469656);
  strictEqual(fixedTanh(1883508468, 4), 2147483647);
});

Deno.test("fixedLogistic() and fixedTanh() approximate the real functions on Q4.27", () => {
  for (const x of [-6, -1.5, -0.3, 0.2, 1, 4.5]) {
    const raw = Math.round(x * 2 ** 27);
    ok(Math.abs(fixedLogistic(raw, 4) / Q31 - 1 / (1 + Math.exp(-x))) < 1e-6, `logistic(${x})`);
    ok(Math.abs(fixedTanh(raw, 4) / Q31 - Math.tanh(x)) < 1e-6, `tanh(${x})`);
  }
});

Deno.test("oneOverOnePlusXForXIn01() and getReciprocal() divide", () => {
  strictEqual(oneOverOnePlusXForXIn01(994492948), 1467765870);
  // 2.5 in Q12.19: 1/2.5 = 0.4 = scale / 2^numBitsOverUnit.
  const { scale, numBitsOverUnit } = getReciprocal(2.5 * 2 ** 19, 12);
  ok(Math.abs(scale / Q31 / 2 ** numBitsOverUnit - 0.4) < 1e-8);
});

Deno.test("getInvSqrtQuantizedMultiplierExp() matches TFLite, including the wrap at 1", () => {
  const at100 = getInvSqrtQuantizedMultiplierExp(100, -1);
  strictEqual(at100.multiplier, 214748363);
  strictEqual(at100.shift, 0);
  // Android 10's TFLite overflows for input 1 (fixed later upstream); NNAPI inherits it.
  strictEqual(getInvSqrtQuantizedMultiplierExp(1, -1).multiplier, -2147483640);
  const large = getInvSqrtQuantizedMultiplierExp(1234567, -1);
  const value = large.multiplier / Q31 * 2 ** large.shift;
  ok(Math.abs(value - 1 / Math.sqrt(1234567)) < 1e-6);
});

Deno.test("saturatingRoundingMultiplyByPOT() saturates left shifts and rounds right shifts", () => {
  strictEqual(saturatingRoundingMultiplyByPOT(1 << 29, 2), 2147483647);
  strictEqual(saturatingRoundingMultiplyByPOT(-(1 << 29) - 1, 2), -2147483648);
  strictEqual(saturatingRoundingMultiplyByPOT(5, -1), 3);
  strictEqual(saturatingRoundingMultiplyByPOT(-5, -1), -3);
  strictEqual(rescale(1 << 20, 0, 12), 1 << 8);
  strictEqual(roundingHalfSum(3, 4), 4);
  strictEqual(roundingHalfSum(-3, -4), -4);
});

Deno.test("calculateInputRadius() floors the largest representable input", () => {
  strictEqual(calculateInputRadius(4, 27), 15);
  strictEqual(calculateInputRadius(5, 20), 31 * 2 ** 6);
});
