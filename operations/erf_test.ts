import { ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import { erf } from "./erf.ts";

const tensor = (type: "TENSOR_FLOAT32" | "TENSOR_FLOAT16", values: number[]): Tensor => ({
  type,
  shape: [values.length],
  scale: 0,
  zeroPoint: 0,
  data: type === "TENSOR_FLOAT32" ? Float32Array.from(values) : Float16Array.from(values),
});

Deno.test("ERF is the error function within 1.2e-7 (odd, 0 at 0, ±1 far out), float32 and float16", () => {
  // erf to 10 places (Abramowitz and Stegun, table 7.1).
  const known: [number, number][] = [
    [0, 0],
    [0.1, 0.1124629160],
    [0.5, 0.5204998778],
    [1, 0.8427007929],
    [-1.5, -0.9661051465],
    [2, 0.9953222650],
    [-3, -0.9999779095],
    [6, 1],
  ];
  const input = tensor("TENSOR_FLOAT32", known.map(([x]) => x));
  const output = tensor("TENSOR_FLOAT32", known.map(() => NaN));
  erf.execute([input], [output]);
  known.forEach(([x, want], i) => {
    const got = output.data![i] as number;
    ok(Math.abs(got - want) <= 1.2e-7 * Math.max(1, Math.abs(want)) + 6e-8, `erf(${x}) = ${got}`);
  });
  const half = tensor("TENSOR_FLOAT16", [0.5, -2]);
  const halfOut = tensor("TENSOR_FLOAT16", [0, 0]);
  erf.execute([half], [halfOut]);
  strictEqual(halfOut.data![0], Math.f16round(0.5204998778));
  strictEqual(halfOut.data![1], Math.f16round(-0.9953222650));
});

Deno.test("ERF validates as a one-input float operation of HAL 1.3 operand types", () => {
  const operand = (type: "TENSOR_FLOAT32" | "TENSOR_INT32", index: number) => ({
    index,
    type,
    dimensions: [3],
    scale: 0,
    zeroPoint: 0,
    lifetime: "TEMPORARY_VARIABLE" as const,
  });
  strictEqual(
    erf.validate({
      type: "ERF",
      inputs: [operand("TENSOR_FLOAT32", 0)],
      outputs: [operand("TENSOR_FLOAT32", 1)],
    }),
    "V1_3",
  );
  throws(
    () =>
      erf.validate({
        type: "ERF",
        inputs: [operand("TENSOR_INT32", 0)],
        outputs: [operand("TENSOR_INT32", 1)],
      }),
    /unsupported type TENSOR_INT32/,
  );
});
