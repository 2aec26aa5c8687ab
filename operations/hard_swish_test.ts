import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { hardSwish } from "./hard_swish.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  scale = 0,
  zeroPoint = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint, lifetime: "MODEL_INPUT" };
}

function validate(input: DeclaredOperand, output: DeclaredOperand) {
  return hardSwish.validate({ type: "HARD_SWISH", inputs: [input], outputs: [output] });
}

function tensor(type: OperandType, data: TensorData, scale = 0, zeroPoint = 0): Tensor {
  return { type, shape: [data.length], scale, zeroPoint, data };
}

/** x * relu6(x + 3) / 6, the formula NNAPI documents. */
function formula(x: number): number {
  return x * Math.min(6, Math.max(0, x + 3)) / 6;
}

Deno.test("hardSwish() needs V1_3 for float and quant8 (unsigned and signed) tensors of any rank", () => {
  for (const type of ["TENSOR_FLOAT32", "TENSOR_FLOAT16"] as const) {
    strictEqual(validate(operand(0, type, [1, 2, 3, 4, 5]), operand(1, type, [])), "V1_3");
  }
  for (const type of ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"] as const) {
    strictEqual(validate(operand(0, type, [2], 0.1, 0), operand(1, type, [2], 0.05, 3)), "V1_3");
  }
});

Deno.test("hardSwish() rejects int32, a different output type, two inputs and a tiny output scale", () => {
  throws(
    () => validate(operand(0, "TENSOR_INT32", [2]), operand(1, "TENSOR_INT32", [2])),
    /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
  );
  throws(
    () => validate(operand(0, "TENSOR_FLOAT32", [2]), operand(1, "TENSOR_FLOAT16", [2])),
    /output 0 \(operand 1\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
  const input = operand(0, "TENSOR_FLOAT32", [2]);
  throws(
    () =>
      hardSwish.validate({
        type: "HARD_SWISH",
        inputs: [input, input],
        outputs: [operand(1, "TENSOR_FLOAT32", [2])],
      }),
    /expected 1 inputs, got 2/,
  );
  throws(
    () =>
      validate(
        operand(0, "TENSOR_QUANT8_ASYMM", [2], 1, 0),
        operand(1, "TENSOR_QUANT8_ASYMM", [2], 1 / 256, 0),
      ),
    /output 0 \(operand 1\) has scale 0.00390625, too small/,
  );
});

Deno.test("hardSwish() keeps the input's shape", () => {
  const input = {
    ...tensor("TENSOR_FLOAT32", new Float32Array(6)),
    shape: [3, 2],
    value: undefined,
  };
  deepStrictEqual(hardSwish.prepare([input], []), [[3, 2]]);
});

Deno.test("hardSwish() is 0 below -3, x above 3 and x * (x + 3) / 6 between", () => {
  const values = [-4, -3, -1, 0, 0.5, 2, 3, 4];
  const out = new Float32Array(values.length);
  hardSwish.execute([tensor("TENSOR_FLOAT32", Float32Array.from(values))], [
    tensor("TENSOR_FLOAT32", out),
  ]);
  const expected = [0, 0, -1 / 3, 0, 0.5 * 3.5 / 6, 2 * 5 / 6, 3, 4];
  [...out].forEach((v, i) => ok(Math.abs(v - expected[i]) <= 1e-7, `element ${i}: ${v}`));
  const half = new Float16Array(2);
  hardSwish.execute([tensor("TENSOR_FLOAT16", Float16Array.of(-1, 1))], [
    tensor("TENSOR_FLOAT16", half),
  ]);
  deepStrictEqual([...half], [Math.f16round(-1 / 3), Math.f16round(4 / 6)]);
});

Deno.test("hardSwish() on quant8 matches the fixed-point steps worked by hand", () => {
  // Scale 0.1, zero point 128 on both sides: the output multiplier is 1/128 (Q15 16384,
  // exponent -6), the relu-ish one 0.1 * 256 / 3 (Q15 17476, exponent 4). x = 3 gives
  // preshift 1920, reluish 32767, 32767 * 1920 >> 15 = 1919, /64 rounded = 30: q = 158.
  // x = -1 gives preshift -640, reluish 10923, trunc(10923 * -640 / 32768) = -213,
  // /64 rounded = -3: q = 125.
  const out = new Uint8Array(4);
  hardSwish.execute(
    [tensor("TENSOR_QUANT8_ASYMM", Uint8Array.of(158, 128, 118, 0), 0.1, 128)],
    [tensor("TENSOR_QUANT8_ASYMM", out, 0.1, 128)],
  );
  deepStrictEqual([...out], [158, 128, 125, 128]);
  const signed = new Int8Array(4);
  hardSwish.execute(
    [tensor("TENSOR_QUANT8_ASYMM_SIGNED", Int8Array.of(30, 0, -10, -128), 0.1, 0)],
    [tensor("TENSOR_QUANT8_ASYMM_SIGNED", signed, 0.1, 0)],
  );
  deepStrictEqual([...signed], [30, 0, -3, 0]);
});

Deno.test("hardSwish() on quant8 is within one step of the float formula for every input byte", () => {
  for (const [inScale, inZero, outScale, outZero] of [[0.05, 100, 0.03, 20], [0.2, 128, 0.1, 60]]) {
    const input = Uint8Array.from({ length: 256 }, (_, i) => i);
    const out = new Uint8Array(256);
    hardSwish.execute([tensor("TENSOR_QUANT8_ASYMM", input, inScale, inZero)], [
      tensor("TENSOR_QUANT8_ASYMM", out, outScale, outZero),
    ]);
    const signed = new Int8Array(256);
    hardSwish.execute(
      [tensor(
        "TENSOR_QUANT8_ASYMM_SIGNED",
        Int8Array.from(input, (q) => q - 128),
        inScale,
        inZero - 128,
      )],
      [tensor("TENSOR_QUANT8_ASYMM_SIGNED", signed, outScale, outZero - 128)],
    );
    for (let q = 0; q < 256; q++) {
      const ideal = Math.min(
        255,
        Math.max(0, formula((q - inZero) * inScale) / outScale + outZero),
      );
      ok(Math.abs(out[q] - ideal) <= 1, `q ${q}: ${out[q]}, ideal ${ideal}`);
      strictEqual(signed[q], out[q] - 128, `signed form of q ${q}`);
    }
  }
});

Deno.test("hardSwish() binds the same quant8 kernel it runs", () => {
  const info = { type: "TENSOR_QUANT8_ASYMM", shape: [3], scale: 0.1, zeroPoint: 128 } as const;
  const kernel = hardSwish.bindReference!([{ ...info, value: undefined }], [info]);
  const out = new Uint8Array(3);
  kernel!([tensor("TENSOR_QUANT8_ASYMM", Uint8Array.of(158, 128, 118), 0.1, 128)], [
    tensor("TENSOR_QUANT8_ASYMM", out, 0.1, 128),
  ]);
  deepStrictEqual([...out], [158, 128, 125]);
});
