import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { boxWithNmsLimit } from "./box_with_nms_limit.ts";
import {
  type DeclaredOperand,
  type OperationSignature,
  type PrepareInput,
  ValueNotYetKnown,
} from "./operation.ts";

function declared(
  type: OperandType,
  dimensions: number[],
  index: number,
  scale = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType): OperationSignature {
  const quant = type === "TENSOR_QUANT8_ASYMM";
  const boxType = quant ? "TENSOR_QUANT16_ASYMM" : type;
  const real = type === "TENSOR_FLOAT16" ? "FLOAT16" : "FLOAT32";
  const scalars: OperandType[] = [real, "INT32", "INT32", real, real, real];
  return {
    type: "BOX_WITH_NMS_LIMIT",
    inputs: [
      declared(type, [3, 2], 0, quant ? 0.01 : 0),
      declared(boxType, [3, 8], 1, quant ? 0.125 : 0),
      declared("TENSOR_INT32", [3], 2),
      ...scalars.map((t, i) => declared(t, [], 3 + i)),
    ],
    outputs: [
      declared(type, [0], 9, quant ? 0.01 : 0),
      declared(boxType, [0, 4], 10, quant ? 0.125 : 0),
      declared("TENSOR_INT32", [0], 11),
      declared("TENSOR_INT32", [0], 12),
    ],
  };
}

const fault = (message: RegExp) => ({ name: "OperationError", message });

Deno.test("boxWithNmsLimit.validate() accepts float32, float16 and quant8", () => {
  strictEqual(boxWithNmsLimit.validate(signature("TENSOR_FLOAT32")), "V1_2");
  strictEqual(boxWithNmsLimit.validate(signature("TENSOR_FLOAT16")), "V1_2");
  strictEqual(boxWithNmsLimit.validate(signature("TENSOR_QUANT8_ASYMM")), "V1_2");
});

Deno.test("boxWithNmsLimit.validate() rejects wrong input and output counts", () => {
  const s = signature("TENSOR_FLOAT32");
  throws(
    () => boxWithNmsLimit.validate({ ...s, inputs: s.inputs.slice(0, 6) }),
    fault(/expected 9 inputs, got 6/),
  );
  throws(
    () => boxWithNmsLimit.validate({ ...s, outputs: s.outputs.slice(0, 3) }),
    fault(/expected 4 outputs, got 3/),
  );
});

Deno.test("boxWithNmsLimit.validate() rejects a wrong type", () => {
  throws(
    () => boxWithNmsLimit.validate(signature("TENSOR_INT32")),
    fault(/input 0 \(operand 0\) has unsupported type TENSOR_INT32/),
  );
  const s = signature("TENSOR_FLOAT32");
  const outputs = [...s.outputs];
  outputs[2] = declared("TENSOR_FLOAT32", [0], 11);
  throws(
    () => boxWithNmsLimit.validate({ ...s, outputs }),
    fault(/output 2 \(operand 11\) has type TENSOR_FLOAT32, expected TENSOR_INT32/),
  );
});

Deno.test("boxWithNmsLimit.validate() rejects a wrong rank", () => {
  const s = signature("TENSOR_FLOAT32");
  const inputs = [...s.inputs];
  inputs[0] = declared("TENSOR_FLOAT32", [3, 2, 1], 0);
  throws(
    () => boxWithNmsLimit.validate({ ...s, inputs }),
    fault(/input 0 \(operand 0\) has rank 3, expected 2/),
  );
});

function tensor(type: OperandType, shape: number[], value?: TensorData): PrepareInput {
  return { type, shape, scale: 0, zeroPoint: 0, value };
}

function inputs(known: boolean, kernel = 0): PrepareInput[] {
  const scalar = (type: OperandType, v: number) =>
    tensor(type, [], type === "INT32" ? new Int32Array([v]) : new Float32Array([v]));
  // Three boxes of class 1: the first two overlap (IoU 0.81), the third is apart.
  const scores = new Float32Array([0, 0.9, 0, 0.8, 0, 0.7]);
  const boxes = new Float32Array([
    ...[0, 0, 1, 1, 0, 0, 10, 10],
    ...[0, 0, 1, 1, 0, 0, 9, 9],
    ...[0, 0, 1, 1, 20, 20, 30, 30],
  ]);
  return [
    tensor("TENSOR_FLOAT32", [3, 2], known ? scores : undefined),
    tensor("TENSOR_FLOAT32", [3, 8], boxes),
    tensor("TENSOR_INT32", [3], new Int32Array([0, 0, 0])),
    scalar("FLOAT32", 0.5),
    scalar("INT32", -1),
    scalar("INT32", kernel),
    scalar("FLOAT32", 0.5),
    scalar("FLOAT32", 1),
    scalar("FLOAT32", 0.1),
  ];
}

Deno.test("boxWithNmsLimit.prepare() waits for the scores, then counts the kept boxes", () => {
  throws(() => boxWithNmsLimit.prepare(inputs(false), []), ValueNotYetKnown);
  deepStrictEqual(boxWithNmsLimit.prepare(inputs(true), []), [[2], [2, 4], [2], [2]]);
  // Linear decay keeps the overlapping box with score 0.8 * (1 - 0.81) > 0.1.
  deepStrictEqual(boxWithNmsLimit.prepare(inputs(true, 1), []), [[3], [3, 4], [3], [3]]);
});

Deno.test("boxWithNmsLimit.prepare() rejects an unknown NMS kernel", () => {
  throws(() => boxWithNmsLimit.prepare(inputs(true, 3), []), fault(/NMS kernel \(input 5\) is 3/));
});
