import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { axisAlignedBboxTransform } from "./axis_aligned_bbox_transform.ts";
import { operand, signatureOf } from "./common/shape_ops_fixture.ts";

function signature(roiType: OperandType, deltaType: OperandType, roiDims = [5, 4]) {
  const box = roiType === "TENSOR_QUANT16_ASYMM" ? { scale: 0.125 } : {};
  return signatureOf("AXIS_ALIGNED_BBOX_TRANSFORM", [
    operand(roiType, roiDims, box),
    operand(deltaType, [5, 8], { scale: 0.05, zeroPoint: 128 }),
    operand("TENSOR_INT32", [5]),
    operand(roiType, [4, 2], box),
  ], [operand(roiType, [5, 8], box)]);
}

Deno.test("axisAlignedBboxTransform() needs V1_2 and names bad counts, types and ranks", () => {
  strictEqual(
    axisAlignedBboxTransform.validate(signature("TENSOR_FLOAT32", "TENSOR_FLOAT32")),
    "V1_2",
  );
  strictEqual(
    axisAlignedBboxTransform.validate(signature("TENSOR_QUANT16_ASYMM", "TENSOR_QUANT8_ASYMM")),
    "V1_2",
  );
  const good = signature("TENSOR_FLOAT32", "TENSOR_FLOAT32");
  throws(
    () => axisAlignedBboxTransform.validate({ ...good, inputs: good.inputs.slice(0, 3) }),
    /expected 4 inputs, got 3/,
  );
  throws(
    () => axisAlignedBboxTransform.validate(signature("TENSOR_INT32", "TENSOR_INT32")),
    /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
  );
  throws(
    () => axisAlignedBboxTransform.validate(signature("TENSOR_FLOAT32", "TENSOR_FLOAT16")),
    /input 1 \(operand 1\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
  throws(
    () =>
      axisAlignedBboxTransform.validate(signature("TENSOR_FLOAT32", "TENSOR_FLOAT32", [5, 4, 1])),
    /input 0 \(operand 0\) has rank 3, expected 2/,
  );
});

Deno.test("axisAlignedBboxTransform() decodes deltas and clips to the image", () => {
  const info = { scale: 0, zeroPoint: 0 };
  const out = new Float32Array(4);
  axisAlignedBboxTransform.execute([
    { ...info, type: "TENSOR_FLOAT32", shape: [1, 4], data: Float32Array.of(0, 0, 10, 10) },
    { ...info, type: "TENSOR_FLOAT32", shape: [1, 4], data: Float32Array.of(0.5, 0, 0, 0) },
    { ...info, type: "TENSOR_INT32", shape: [1], data: Int32Array.of(0) },
    { ...info, type: "TENSOR_FLOAT32", shape: [1, 2], data: Float32Array.of(20, 12) },
  ], [{ ...info, type: "TENSOR_FLOAT32", shape: [1, 4], data: out }]);
  deepStrictEqual([...out], [5, 0, 12, 10]);
});
