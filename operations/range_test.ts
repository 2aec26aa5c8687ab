import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import { ValueNotYetKnown } from "./operation.ts";
import { range } from "./range.ts";

const int32 = (v: number): Tensor => ({
  type: "TENSOR_INT32",
  shape: [1],
  scale: 0,
  zeroPoint: 0,
  data: Int32Array.of(v),
});
const float32 = (v: number): Tensor => ({
  ...int32(0),
  type: "TENSOR_FLOAT32",
  data: Float32Array.of(v),
});

function run(inputs: Tensor[]): number[] {
  const [[length]] = range.prepare(inputs.map((t) => ({ ...t, value: t.data })), []);
  const data = inputs[0].type === "TENSOR_INT32"
    ? new Int32Array(length)
    : new Float32Array(length);
  range.execute(inputs, [{ ...inputs[0], shape: [length], data }]);
  return Array.from(data);
}

Deno.test("range() counts from start by delta up to but not including limit, as ONNX's Range", () => {
  deepStrictEqual(run([int32(0), int32(5), int32(1)]), [0, 1, 2, 3, 4]);
  deepStrictEqual(run([int32(10), int32(1), int32(-3)]), [10, 7, 4]);
  deepStrictEqual(run([int32(3), int32(3), int32(1)]), []);
  // float32 accumulates, as onnxruntime does.
  const floats = run([float32(0), float32(1), float32(0.1)]);
  strictEqual(floats.length, 10);
  strictEqual(floats[9], Math.fround(floats[8] + Math.fround(0.1)));
});

Deno.test("range() needs its values to know its length, and refuses a zero delta", () => {
  throws(
    () =>
      range.prepare([int32(0), int32(5), int32(1)].map((t) => ({ ...t, value: undefined })), []),
    ValueNotYetKnown,
  );
  throws(() => run([int32(0), int32(5), int32(0)]), /delta \(input 2\) is 0/);
  strictEqual(
    range.validate({
      type: "RANGE",
      inputs: [0, 1, 2].map((index) => ({
        ...int32(0),
        index,
        dimensions: [1],
        lifetime: "MODEL_INPUT" as const,
      })),
      outputs: [{ ...int32(0), index: 3, dimensions: [0], lifetime: "MODEL_OUTPUT" as const }],
    }),
    "V1_3",
  );
});
