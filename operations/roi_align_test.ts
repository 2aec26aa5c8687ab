import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand, OperationSignature, PrepareInput } from "./operation.ts";
import { roiAlign } from "./roi_align.ts";

function declared(
  type: OperandType,
  dimensions: number[],
  index: number,
  scale = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, roiType: OperandType = type): OperationSignature {
  const stride = type === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  const scalars: OperandType[] = ["INT32", "INT32", stride, stride, "INT32", "INT32", "BOOL"];
  return {
    type: "ROI_ALIGN",
    inputs: [
      declared(type, [1, 4, 4, 1], 0, type === "TENSOR_QUANT8_ASYMM" ? 0.5 : 0),
      declared(roiType, [2, 4], 1, roiType === "TENSOR_QUANT16_ASYMM" ? 0.125 : 0),
      declared("TENSOR_INT32", [2], 2),
      ...scalars.map((t, i) => declared(t, [], 3 + i)),
    ],
    outputs: [declared(type, [2, 2, 2, 1], 10, type === "TENSOR_QUANT8_ASYMM" ? 0.5 : 0)],
  };
}

const fault = (message: RegExp) => ({ name: "OperationError", message });

Deno.test("roiAlign.validate() accepts float32, float16 and quant8 with quant16 ROIs", () => {
  strictEqual(roiAlign.validate(signature("TENSOR_FLOAT32")), "V1_2");
  strictEqual(roiAlign.validate(signature("TENSOR_FLOAT16")), "V1_2");
  strictEqual(
    roiAlign.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_QUANT16_ASYMM")),
    "V1_2",
  );
});

Deno.test("roiAlign.validate() rejects a wrong input count", () => {
  const s = signature("TENSOR_FLOAT32");
  throws(
    () => roiAlign.validate({ ...s, inputs: s.inputs.slice(0, 9) }),
    fault(/expected 10 inputs, got 9/),
  );
});

Deno.test("roiAlign.validate() rejects an unsupported or mismatched type", () => {
  throws(
    () => roiAlign.validate(signature("TENSOR_INT32")),
    fault(/input 0 \(operand 0\) has unsupported type TENSOR_INT32/),
  );
  throws(
    () => roiAlign.validate(signature("TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT32")),
    fault(/input 1 \(operand 1\) has type TENSOR_FLOAT32, expected TENSOR_QUANT16_ASYMM/),
  );
});

Deno.test("roiAlign.validate() rejects a wrong rank", () => {
  const s = signature("TENSOR_FLOAT32");
  const inputs = [...s.inputs];
  inputs[1] = declared("TENSOR_FLOAT32", [2, 4, 1], 1);
  throws(
    () => roiAlign.validate({ ...s, inputs }),
    fault(/input 1 \(operand 1\) has rank 3, expected 2/),
  );
});

Deno.test("roiAlign.prepare() gives numRois x out size, zero ROIs included, in NCHW", () => {
  const tensor = (shape: number[]): PrepareInput => ({
    type: "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    value: undefined,
  });
  const scalar = (type: OperandType, v: number): PrepareInput => ({
    type,
    shape: [],
    scale: 0,
    zeroPoint: 0,
    value: type === "FLOAT32" ? new Float32Array([v]) : new Int32Array([v]),
  });
  const inputs = (numRois: number, nchw: number) => [
    tensor([1, 3, 4, 5]),
    tensor([numRois, 4]),
    { ...tensor([numRois]), type: "TENSOR_INT32" as const },
    scalar("INT32", 2),
    scalar("INT32", 3),
    scalar("FLOAT32", 1),
    scalar("FLOAT32", 1),
    scalar("INT32", 0),
    scalar("INT32", 0),
    { ...scalar("INT32", nchw), type: "BOOL" as const, value: new Uint8Array([nchw]) },
  ];
  deepStrictEqual(roiAlign.prepare(inputs(2, 1), []), [[2, 3, 2, 3]]);
  deepStrictEqual(roiAlign.prepare(inputs(0, 0), []), [[0, 2, 3, 5]]);
});
