import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { dynamicQuantizeFullyConnected } from "./dynamic_quantize_fully_connected.ts";

const float32 = (shape: number[], values: number[]): Tensor => ({
  type: "TENSOR_FLOAT32",
  shape,
  scale: 0,
  zeroPoint: 0,
  data: Float32Array.from(values),
});
const int32 = (v: number): Tensor => ({
  type: "INT32",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  data: Int32Array.of(v),
});

function run(inputs: Tensor[]): number[] {
  const [shape] = dynamicQuantizeFullyConnected.prepare(
    inputs.map((t) => ({ ...t, value: t.data })),
    [],
  );
  const output = float32(shape, new Array(shape[0] * shape[1]).fill(NaN));
  dynamicQuantizeFullyConnected.execute(inputs, [output]);
  return Array.from(output.data as Float32Array);
}

Deno.test("DYNAMIC_QUANTIZE_FULLY_CONNECTED quantizes its input as DynamicQuantizeLinear, multiplies in integers and scales back in float32", () => {
  // x spans [-1, 2.5]: scale 3.5 / 255, zero point round(1 / scale) = round(72.857) = 73.
  const x = [-1, 0, 0.5, 2.5, 1, -0.25];
  const scale = Math.fround(Math.fround(3.5) / 255);
  const zeroPoint = 73;
  const q = x.map((v) =>
    Math.min(255 - zeroPoint, Math.max(-zeroPoint, Math.round(Math.fround(v / scale))))
  );
  // Weights [2 units, 3], zero point 128, scale 0.5.
  const w = [128, 129, 127, 130, 128, 0];
  const weights: Tensor = {
    type: "TENSOR_QUANT8_ASYMM",
    shape: [2, 3],
    scale: 0.5,
    zeroPoint: 128,
    data: Uint8Array.from(w),
  };
  const bias = [0.25, -1];
  const got = run([float32([2, 3], x), weights, float32([2], bias), int32(0)]);
  const multiplier = Math.fround(scale * 0.5);
  const want = [0, 1].flatMap((row) =>
    [0, 1].map((unit) => {
      let sum = 0;
      for (let p = 0; p < 3; p++) sum += q[row * 3 + p] * (w[unit * 3 + p] - 128);
      return Math.fround(Math.fround(sum * multiplier) + bias[unit]);
    })
  );
  deepStrictEqual(got, want);
  // RELU clamps; signed weights take their zero point as well.
  const signed: Tensor = {
    type: "TENSOR_QUANT8_ASYMM_SIGNED",
    shape: [2, 3],
    scale: 0.5,
    zeroPoint: 0,
    data: Int8Array.from(w, (v) => v - 128),
  };
  deepStrictEqual(
    run([float32([2, 3], x), signed, float32([2], bias), int32(1)]),
    want.map((v) => Math.max(0, v)),
  );
});

Deno.test("DYNAMIC_QUANTIZE_FULLY_CONNECTED of zeros has scale 1 and gives the bias; a rank-3 input is rows", () => {
  const weights: Tensor = {
    type: "TENSOR_QUANT8_ASYMM",
    shape: [1, 2],
    scale: 0.1,
    zeroPoint: 3,
    data: Uint8Array.of(200, 7),
  };
  deepStrictEqual(
    run([float32([1, 3, 2], [0, 0, 0, 0, 0, 0]), weights, float32([1], [1.5]), int32(0)]),
    [1.5, 1.5, 1.5],
  );
});

Deno.test("DYNAMIC_QUANTIZE_FULLY_CONNECTED validates: float32 input, 8-bit weights, float32 bias and output", () => {
  const operand = (type: OperandType, dimensions: number[], index: number) => ({
    index,
    type,
    dimensions,
    scale: type.startsWith("TENSOR_QUANT8") ? 0.5 : 0,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY" as const,
  });
  const signature = (weights: OperandType, output: OperandType = "TENSOR_FLOAT32") => ({
    type: "DYNAMIC_QUANTIZE_FULLY_CONNECTED" as const,
    inputs: [
      operand("TENSOR_FLOAT32", [4, 3], 0),
      operand(weights, [2, 3], 1),
      operand("TENSOR_FLOAT32", [2], 2),
      operand("INT32", [], 3),
    ],
    outputs: [operand(output, [4, 2], 4)],
  });
  strictEqual(dynamicQuantizeFullyConnected.validate(signature("TENSOR_QUANT8_ASYMM")), "V1_3");
  strictEqual(
    dynamicQuantizeFullyConnected.validate(signature("TENSOR_QUANT8_ASYMM_SIGNED")),
    "V1_3",
  );
  throws(
    () => dynamicQuantizeFullyConnected.validate(signature("TENSOR_FLOAT32")),
    /input 1 .* unsupported type TENSOR_FLOAT32/,
  );
  throws(
    () => dynamicQuantizeFullyConnected.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_INT32")),
    /output/,
  );
});
