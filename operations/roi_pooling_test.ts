import { strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand, OperationSignature } from "./operation.ts";
import { roiPooling } from "./roi_pooling.ts";

function declared(
  type: OperandType,
  dimensions: number[],
  index: number,
  scale = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, outputScale = 0.5): OperationSignature {
  const quant = type === "TENSOR_QUANT8_ASYMM";
  const stride = type === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  const scalars: OperandType[] = ["INT32", "INT32", stride, stride, "BOOL"];
  return {
    type: "ROI_POOLING",
    inputs: [
      declared(type, [1, 4, 4, 1], 0, quant ? 0.5 : 0),
      declared(quant ? "TENSOR_QUANT16_ASYMM" : type, [2, 4], 1, quant ? 0.125 : 0),
      declared("TENSOR_INT32", [2], 2),
      ...scalars.map((t, i) => declared(t, [], 3 + i)),
    ],
    outputs: [declared(type, [2, 2, 2, 1], 8, quant ? outputScale : 0)],
  };
}

const fault = (message: RegExp) => ({ name: "OperationError", message });

Deno.test("roiPooling.validate() accepts float32, float16 and quant8", () => {
  strictEqual(roiPooling.validate(signature("TENSOR_FLOAT32")), "V1_2");
  strictEqual(roiPooling.validate(signature("TENSOR_FLOAT16")), "V1_2");
  strictEqual(roiPooling.validate(signature("TENSOR_QUANT8_ASYMM")), "V1_2");
});

Deno.test("roiPooling.validate() rejects a wrong input count", () => {
  const s = signature("TENSOR_FLOAT32");
  throws(
    () => roiPooling.validate({ ...s, inputs: [...s.inputs, declared("INT32", [], 9)] }),
    fault(/expected 8 inputs, got 9/),
  );
});

Deno.test("roiPooling.validate() rejects a wrong type", () => {
  throws(
    () => roiPooling.validate(signature("TENSOR_BOOL8")),
    fault(/input 0 \(operand 0\) has unsupported type TENSOR_BOOL8/),
  );
  const s = signature("TENSOR_FLOAT16");
  const inputs = [...s.inputs];
  inputs[5] = declared("FLOAT32", [], 5);
  throws(
    () => roiPooling.validate({ ...s, inputs }),
    fault(/input 5 \(operand 5\) has type FLOAT32, expected FLOAT16/),
  );
});

Deno.test("roiPooling.validate() rejects a wrong rank", () => {
  const s = signature("TENSOR_FLOAT32");
  throws(
    () => roiPooling.validate({ ...s, outputs: [declared("TENSOR_FLOAT32", [2, 2, 2], 8)] }),
    fault(/output 0 \(operand 8\) has rank 3, expected 4/),
  );
});

Deno.test("roiPooling.validate() wants quant8 output quantization equal to the input's", () => {
  throws(
    () => roiPooling.validate(signature("TENSOR_QUANT8_ASYMM", 0.25)),
    fault(/output 0 \(operand 8\) has scale 0.25/),
  );
});
