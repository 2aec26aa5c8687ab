import { deepStrictEqual, ok } from "node:assert/strict";
import { seededFloats } from "../../../kernels/seeded_random.ts";
import type { Tensor } from "../../../nnapi/tensor.ts";
import { dynamicQuantizeFullyConnected } from "../../../operations/dynamic_quantize_fully_connected.ts";
import { dynamicQuantizeFullyConnectedSimd } from "./dynamic_quantize_fc.ts";

const float32 = (shape: number[], data: Float32Array): Tensor => ({
  type: "TENSOR_FLOAT32",
  shape,
  scale: 0,
  zeroPoint: 0,
  data,
});

/** Runs the step on cpu-simd (packed as at preparation) and on the reference kernel. */
function both(inputs: Tensor[], rows: number, units: number) {
  const step = {
    inputs: inputs.map((t, i) => ({ ...t, value: i === 0 ? undefined : t.data })),
    outputs: [float32([rows, units], new Float32Array(0))],
  };
  ok(dynamicQuantizeFullyConnectedSimd.supports(step));
  const packed = dynamicQuantizeFullyConnectedSimd.pack!(step)!;
  // What the plan keeps of the weights (the packed form) gives them back exactly.
  const [unpacked] = dynamicQuantizeFullyConnectedSimd.unpack!(inputs, packed);
  deepStrictEqual(unpacked, inputs[1].data);
  const kernel = dynamicQuantizeFullyConnectedSimd.bind(step, packed);
  ok(kernel, `bound for ${rows}x${units}`);
  const got = float32([rows, units], new Float32Array(rows * units));
  const want = float32([rows, units], new Float32Array(rows * units));
  kernel(inputs, [got]);
  dynamicQuantizeFullyConnected.execute(inputs, [want]);
  return { got: got.data, want: want.data };
}

Deno.test("DYNAMIC_QUANTIZE_FULLY_CONNECTED on cpu-simd gives the reference's values bit for bit (unsigned and signed weights, inner extents past 256, activations)", () => {
  const cases: [
    number[],
    number,
    "TENSOR_QUANT8_ASYMM" | "TENSOR_QUANT8_ASYMM_SIGNED",
    number,
    number,
  ][] = [
    [[41, 288], 288, "TENSOR_QUANT8_ASYMM", 131, 0],
    [[1, 41, 1152], 288, "TENSOR_QUANT8_ASYMM", 128, 1],
    [[3, 20], 7, "TENSOR_QUANT8_ASYMM_SIGNED", -3, 3],
  ];
  for (const [shape, units, type, zeroPoint, activation] of cases) {
    const depth = shape[shape.length - 1];
    const rows = shape.reduce((a, b) => a * b, 1) / depth;
    const raw = seededFloats(units * depth, 5, 1);
    const weights: Tensor = {
      type,
      shape: [units, depth],
      scale: 0.013,
      zeroPoint,
      data: type === "TENSOR_QUANT8_ASYMM"
        ? Uint8Array.from(raw, (v) => (v + 1) * 127.5)
        : Int8Array.from(raw, (v) => v * 127),
    };
    const inputs = [
      float32(shape, Float32Array.from(seededFloats(rows * depth, 6, 3))),
      weights,
      float32([units], Float32Array.from(seededFloats(units, 7, 1))),
      {
        type: "INT32" as const,
        shape: [],
        scale: 0,
        zeroPoint: 0,
        data: Int32Array.of(activation),
      },
    ];
    const { got, want } = both(inputs, rows, units);
    deepStrictEqual(got, want, `${shape} x ${units} ${type}`);
  }
});

Deno.test("DYNAMIC_QUANTIZE_FULLY_CONNECTED on cpu-simd: sums that could pass 2^24 in float32 run on the reference kernel", () => {
  // Every input value and weight 255 from its zero point: each sum is 1151 * 255 * 255, odd
  // and past 2^24, which float32 partial sums would round on the way.
  const [rows, depth, units] = [2, 1151, 3];
  const x = new Float32Array(rows * depth).fill(1);
  const weights: Tensor = {
    type: "TENSOR_QUANT8_ASYMM",
    shape: [units, depth],
    scale: 1,
    zeroPoint: 0,
    data: new Uint8Array(units * depth).fill(255),
  };
  const inputs = [
    float32([rows, depth], x),
    weights,
    float32([units], new Float32Array(units)),
    { type: "INT32" as const, shape: [], scale: 0, zeroPoint: 0, data: Int32Array.of(0) },
  ];
  const { got, want } = both(inputs, rows, units);
  deepStrictEqual(got, want);
});
