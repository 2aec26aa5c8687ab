import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { fromCheckedNumbers, fromNumbers, type JsonNumber, numberFitsType } from "./tensor.ts";
import type { OperandType } from "./types.ts";

Deno.test("fromCheckedNumbers() converts what numberFitsType() admits, as fromNumbers() does, and names the first misfit", () => {
  const types: OperandType[] = [
    "TENSOR_FLOAT32",
    "FLOAT32",
    "TENSOR_FLOAT16",
    "TENSOR_INT32",
    "TENSOR_QUANT8_ASYMM",
    "TENSOR_QUANT8_ASYMM_SIGNED",
    "TENSOR_QUANT16_SYMM",
    "TENSOR_BOOL8",
  ];
  const values: JsonNumber[] = [
    0,
    1,
    -1,
    0.5,
    255,
    256,
    -129,
    70000,
    3e38,
    1e39,
    -1e39,
    65504,
    65520,
    NaN,
    Infinity,
    "NaN",
    "Infinity",
    "-Infinity",
  ];
  for (const type of types) {
    const fitting = values.filter((v) => numberFitsType(type, v));
    deepStrictEqual(fromCheckedNumbers(type, fitting), fromNumbers(type, fitting), type);
    for (const [k, v] of values.entries()) {
      if (numberFitsType(type, v)) continue;
      strictEqual(fromCheckedNumbers(type, [...fitting, v, 0]), fitting.length, `${type} ${k}`);
    }
  }
});
