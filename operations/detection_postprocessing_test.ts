import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { known, operand, signatureOf } from "./common/shape_ops_fixture.ts";
import { detectionPostprocessing } from "./detection_postprocessing.ts";

function signature(type: OperandType, scoreDims = [1, 6, 3]) {
  const scalar: OperandType = type === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  return signatureOf("DETECTION_POSTPROCESSING", [
    operand(type, scoreDims),
    operand(type, [1, 6, 4]),
    operand(type, [6, 4]),
    ...[10, 10, 5, 5].map((v) => operand(scalar, [], { value: [v] })),
    operand("BOOL", [], { value: [0] }),
    ...[3, 1, 1].map((v) => operand("INT32", [], { value: [v] })),
    operand(scalar, [], { value: [0] }),
    operand(scalar, [], { value: [0.5] }),
    operand("BOOL", [], { value: [0] }),
  ], [
    operand(type, [1, 3]),
    operand(type, [1, 3, 4]),
    operand("TENSOR_INT32", [1, 3]),
    operand("TENSOR_INT32", [1]),
  ]);
}

Deno.test("detectionPostprocessing() needs V1_2 and names bad counts, types and ranks", () => {
  strictEqual(detectionPostprocessing.validate(signature("TENSOR_FLOAT16")), "V1_2");
  const good = signature("TENSOR_FLOAT32");
  throws(
    () => detectionPostprocessing.validate({ ...good, outputs: good.outputs.slice(0, 3) }),
    /expected 4 outputs, got 3/,
  );
  throws(
    () => detectionPostprocessing.validate(signature("TENSOR_QUANT8_ASYMM")),
    /input 0 \(operand 0\) has unsupported type TENSOR_QUANT8_ASYMM/,
  );
  throws(
    () =>
      detectionPostprocessing.validate({
        ...good,
        inputs: good.inputs.map((o, i) => i === 8 ? { ...o, type: "FLOAT32" } : o),
      }),
    /input 8 \(operand 8\) has type FLOAT32, expected INT32/,
  );
  throws(
    () => detectionPostprocessing.validate(signature("TENSOR_FLOAT32", [6, 3])),
    /input 0 \(operand 0\) has rank 2, expected 3/,
  );
});

Deno.test("detectionPostprocessing() sizes fast-NMS outputs by detections x classes", () => {
  const inputs = signature("TENSOR_FLOAT32").inputs.map((o) =>
    known(o.type, [...o.dimensions], o.value ? [...o.value].map(Number) : undefined)
  );
  deepStrictEqual(
    detectionPostprocessing.prepare(inputs, []),
    [[1, 3], [1, 3, 4], [1, 3], [1]],
  );
});
