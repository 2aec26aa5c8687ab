import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import type { Tensor, TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { l2Normalization } from "./l2_normalization.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  quantization = { scale: 0, zeroPoint: 0 },
): DeclaredOperand {
  return { index, type, dimensions, ...quantization, lifetime: "MODEL_INPUT" };
}

function tensor(
  type: OperandType,
  shape: number[],
  data: TensorData,
  quantization = { scale: 0, zeroPoint: 0 },
): Tensor {
  return { type, shape, ...quantization, data };
}

const axis = (value: number) => tensor("INT32", [], Int32Array.of(value));

/**
 * A [2, 3] input normalized along axis 0: column 0 is (3, 4) -> (0.6, 0.8), column 1 is
 * all zeros -> (0, 0) as HAL 1.3 defines it, column 2 is (0, -2) -> (0, -1).
 */
const COLUMNS = [3, 0, 0, 4, 0, -2];
const NORMALIZED = [0.6, 0, 0, 0.8, 0, -1];

Deno.test("l2Normalization() keeps its versions: the zero-vector rule adds no form", () => {
  const sig = (type: OperandType, dims: number[], out = { scale: 0, zeroPoint: 0 }) => ({
    type: "L2_NORMALIZATION" as const,
    inputs: [operand(0, type, dims, { scale: 0.5, zeroPoint: 0 })],
    outputs: [operand(1, type, dims, out)],
  });
  strictEqual(l2Normalization.validate(sig("TENSOR_FLOAT32", [1, 1, 2, 3])), "V1_0");
  strictEqual(l2Normalization.validate(sig("TENSOR_FLOAT16", [2, 3])), "V1_2");
  const q = { scale: 1 / 128, zeroPoint: 128 };
  strictEqual(l2Normalization.validate(sig("TENSOR_QUANT8_ASYMM", [2, 3], q)), "V1_2");
  const signed = { scale: 1 / 128, zeroPoint: 0 };
  strictEqual(l2Normalization.validate(sig("TENSOR_QUANT8_ASYMM_SIGNED", [2, 3], signed)), "V1_3");
  throws(
    () => l2Normalization.validate(sig("TENSOR_QUANT8_ASYMM_SIGNED", [2, 3], q)),
    /output 0 \(operand 1\) must have scale 1\/128 and zero point 128, has 0.0078125 and 256/,
  );
});

Deno.test("l2Normalization() maps an all-zero float32 or float16 vector to zeros", () => {
  for (
    const [type, make] of [
      ["TENSOR_FLOAT32", (v: number[]) => Float32Array.from(v)],
      ["TENSOR_FLOAT16", (v: number[]) => Float16Array.from(v)],
    ] as const
  ) {
    const out = tensor(type, [2, 3], make(Array(6).fill(NaN)));
    l2Normalization.execute([tensor(type, [2, 3], make(COLUMNS)), axis(0)], [out]);
    const tolerance = type === "TENSOR_FLOAT16" ? 1e-3 : 1e-6;
    NORMALIZED.forEach((e, i) =>
      ok(Math.abs(out.data![i] - e) <= tolerance, `${type} element ${i}: ${out.data![i]}`)
    );
    deepStrictEqual([out.data![1], out.data![4]], [0, 0]);
  }
  // The whole tensor zero, normalized along the last axis without the axis input.
  const zeros = tensor("TENSOR_FLOAT32", [1, 1, 2, 3], new Float32Array(6).fill(NaN));
  l2Normalization.execute([tensor("TENSOR_FLOAT32", [1, 1, 2, 3], new Float32Array(6))], [zeros]);
  deepStrictEqual([...zeros.data as Float32Array], Array(6).fill(0));
});

Deno.test("l2Normalization() maps an all-zero-point quant8 vector to the output zero point", () => {
  const input = { scale: 0.25, zeroPoint: 100 };
  const output = { scale: 1 / 128, zeroPoint: 128 };
  const out = tensor("TENSOR_QUANT8_ASYMM", [2, 3], new Uint8Array(6), output);
  const data = Uint8Array.from(COLUMNS, (v) => v + 100);
  l2Normalization.execute([tensor("TENSOR_QUANT8_ASYMM", [2, 3], data, input), axis(0)], [out]);
  const values = [...out.data as Uint8Array];
  // 128 + 128 * x: column 0 within one step of 204.8 and 230.4, column 1 exactly 128.
  deepStrictEqual([values[1], values[4], values[2], values[5]], [128, 128, 128, 0]);
  ok(Math.abs(values[0] - 204.8) <= 1 && Math.abs(values[3] - 230.4) <= 1, `${values}`);
});

Deno.test("l2Normalization() maps an all-zero-point signed quant8 vector to 0", () => {
  const input = { scale: 0.25, zeroPoint: -28 };
  const output = { scale: 1 / 128, zeroPoint: 0 };
  const out = tensor("TENSOR_QUANT8_ASYMM_SIGNED", [2, 3], new Int8Array(6), output);
  const data = Int8Array.from(COLUMNS, (v) => v - 28);
  l2Normalization.execute([
    tensor("TENSOR_QUANT8_ASYMM_SIGNED", [2, 3], data, input),
    axis(-2),
  ], [out]);
  const values = [...out.data as Int8Array];
  deepStrictEqual([values[1], values[4], values[2], values[5]], [0, 0, 0, -128]);
  ok(Math.abs(values[0] - 76.8) <= 1 && Math.abs(values[3] - 102.4) <= 1, `${values}`);
});
