import { strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { heatmapMaxKeypoint } from "./heatmap_max_keypoint.ts";

function signature(type: OperandType, boxType: OperandType = type, heatmapDims = [6, 4, 4, 1]) {
  return signatureOf("HEATMAP_MAX_KEYPOINT", [
    operand(type, heatmapDims),
    operand(boxType, [6, 4], { scale: 0.125 }),
    operand("BOOL", [], { value: [0] }),
  ], [operand(type, [6, 1]), operand(boxType, [6, 1, 2], { scale: 0.125 })]);
}

Deno.test("heatmapMaxKeypoint() needs V1_2 and names bad counts, types and ranks", () => {
  strictEqual(heatmapMaxKeypoint.validate(signature("TENSOR_FLOAT16")), "V1_2");
  strictEqual(
    heatmapMaxKeypoint.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_ASYMM")),
    "V1_2",
  );
  const good = signature("TENSOR_FLOAT32");
  throws(
    () => heatmapMaxKeypoint.validate({ ...good, outputs: good.outputs.slice(0, 1) }),
    /expected 2 outputs, got 1/,
  );
  throws(
    () => heatmapMaxKeypoint.validate(signature("TENSOR_INT32")),
    /input 0 \(operand 0\) has unsupported type TENSOR_INT32/,
  );
  throws(
    () => heatmapMaxKeypoint.validate(signature("TENSOR_FLOAT32", "TENSOR_FLOAT16")),
    /input 1 \(operand 1\) has type TENSOR_FLOAT16, expected TENSOR_FLOAT32/,
  );
  throws(
    () => heatmapMaxKeypoint.validate(signature("TENSOR_FLOAT32", "TENSOR_FLOAT32", [6, 4, 4])),
    /input 0 \(operand 0\) has rank 3, expected 4/,
  );
});
