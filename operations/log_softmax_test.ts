import { strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { logSoftmax } from "./log_softmax.ts";
import type { DeclaredOperand } from "./operation.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(type: OperandType, betaType: OperandType, axis = -1) {
  return {
    type: "LOG_SOFTMAX" as const,
    inputs: [
      operand(0, type, [1, 1, 1, 2, 4]),
      operand(1, betaType, []),
      {
        ...operand(2, "INT32", []),
        lifetime: "CONSTANT_COPY" as const,
        value: Int32Array.of(axis),
      },
    ],
    outputs: [operand(3, type, [1, 1, 1, 2, 4])],
  };
}

Deno.test("logSoftmax() needs V1_2 and takes any rank", () => {
  strictEqual(logSoftmax.validate(signature("TENSOR_FLOAT32", "FLOAT32")), "V1_2");
  strictEqual(logSoftmax.validate(signature("TENSOR_FLOAT16", "FLOAT16")), "V1_2");
});

Deno.test("logSoftmax() rejects bad counts, types and axes", () => {
  const good = signature("TENSOR_FLOAT32", "FLOAT32");
  throws(
    () => logSoftmax.validate({ ...good, inputs: good.inputs.slice(0, 2) }),
    /expected 3 inputs/,
  );
  throws(() => logSoftmax.validate(signature("TENSOR_QUANT8_ASYMM", "FLOAT32")), /unsupported/);
  throws(
    () => logSoftmax.validate(signature("TENSOR_FLOAT16", "FLOAT32")),
    /input 1 .* expected FLOAT16/,
  );
  throws(() => logSoftmax.validate(signature("TENSOR_FLOAT32", "FLOAT32", 5)), /axis 5/);
});
