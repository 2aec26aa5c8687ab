import { ok, strictEqual } from "node:assert/strict";
import { multinomial, SeededUniform } from "./multinomial.ts";

Deno.test("SeededUniform yields doubles in [0, 1) that depend on both seeds", () => {
  const a = new SeededUniform(1, 2);
  const values = Array.from({ length: 1000 }, () => a.nextDouble());
  ok(values.every((v) => v >= 0 && v < 1));
  const mean = values.reduce((s, v) => s + v, 0) / values.length;
  ok(Math.abs(mean - 0.5) < 0.05, `mean ${mean}`);
  ok(new SeededUniform(1, 3).nextDouble() !== new SeededUniform(1, 2).nextDouble());
});

Deno.test("multinomial() draws classes with softmax frequencies", () => {
  const samples = 20000;
  const out = new Int32Array(samples);
  const logits = Float32Array.of(0, Math.log(3));
  multinomial(logits, { batches: 1, classes: 2, samples }, new SeededUniform(7, 9), out);
  const ones = out.reduce((s, v) => s + v, 0);
  ok(Math.abs(ones / samples - 0.75) < 0.02, `frequency ${ones / samples}`);
  strictEqual(out.every((v) => v === 0 || v === 1), true);
});
