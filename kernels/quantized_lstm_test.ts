import { ok, strictEqual } from "node:assert/strict";
import { logistic16, tanh16 } from "./quantized_lstm.ts";

Deno.test("logistic16() and tanh16() are exact at 0", () => {
  strictEqual(logistic16(0, 3), 16384);
  strictEqual(tanh16(0, 3), 0);
});

Deno.test("logistic16() and tanh16() of Q3.12 inputs stay within 2^-10 of the real functions", () => {
  for (let raw = -32768; raw <= 32767; raw += 257) {
    const x = raw / 4096;
    ok(Math.abs(logistic16(raw, 3) / 32768 - 1 / (1 + Math.exp(-x))) < 2 ** -10, `logistic ${x}`);
    ok(Math.abs(tanh16(raw, 3) / 32768 - Math.tanh(x)) < 2 ** -10, `tanh ${x}`);
  }
});
