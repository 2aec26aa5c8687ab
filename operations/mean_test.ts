import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { mean } from "./mean.ts";
import type { DeclaredOperand, PrepareInput } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  extra: Partial<DeclaredOperand> = {},
): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT", ...extra };
}

function signature(type: OperandType, dims: number[], axes: number[], extra = {}) {
  return {
    type: "MEAN" as const,
    inputs: [
      operand(0, type, dims, extra),
      operand(1, "TENSOR_INT32", [axes.length], {
        lifetime: "CONSTANT_COPY",
        value: Int32Array.from(axes),
      }),
      operand(2, "INT32", [], { lifetime: "CONSTANT_COPY", value: Int32Array.of(0) }),
    ],
    outputs: [operand(3, type, [0], extra)],
  };
}

Deno.test("mean() needs V1_1 for float32 and quant8, V1_2 for float16", () => {
  strictEqual(mean.validate(signature("TENSOR_FLOAT32", [2, 3], [1])), "V1_1");
  strictEqual(
    mean.validate(signature("TENSOR_QUANT8_ASYMM", [2, 3], [1], { scale: 0.5, zeroPoint: 3 })),
    "V1_1",
  );
  strictEqual(mean.validate(signature("TENSOR_FLOAT16", [2, 3], [1])), "V1_2");
});

Deno.test("mean() rejects a wrong input count, type, rank, axis and output quantization", () => {
  const good = signature("TENSOR_FLOAT32", [2, 3], [1]);
  throws(() => mean.validate({ ...good, inputs: good.inputs.slice(0, 2) }), /expected 3 inputs/);
  throws(() => mean.validate(signature("TENSOR_INT32", [2, 3], [1])), /unsupported type/);
  throws(() => mean.validate(signature("TENSOR_FLOAT32", [1, 1, 1, 1, 2], [1])), /rank 5/);
  throws(() => mean.validate(signature("TENSOR_FLOAT32", [2, 3], [2])), /axis 2/);
  const quant = signature("TENSOR_QUANT8_ASYMM", [2, 3], [1], { scale: 0.5, zeroPoint: 3 });
  throws(
    () => mean.validate({ ...quant, outputs: [operand(3, "TENSOR_QUANT8_ASYMM", [2])] }),
    /expected the input's 0.5 and 3/,
  );
});

Deno.test("mean() infers shapes with negative and duplicate axes and averages quant8 raw values", () => {
  const info = { type: "TENSOR_QUANT8_ASYMM" as const, scale: 0.5, zeroPoint: 3 };
  const prepareInputs: PrepareInput[] = [
    { ...info, shape: [4, 3, 2], value: undefined },
    { ...info, type: "TENSOR_INT32", shape: [3], value: Int32Array.of(1, -3, 0) },
    { ...info, type: "INT32", shape: [], value: Int32Array.of(1) },
  ];
  deepStrictEqual(mean.prepare(prepareInputs, []), [[1, 1, 2]]);
  const inputs: Tensor[] = [
    { ...info, shape: [2, 2], data: Uint8Array.of(1, 2, 4, 6) },
    { ...info, type: "TENSOR_INT32", shape: [1], data: Int32Array.of(-1) },
    { ...info, type: "INT32", shape: [], data: Int32Array.of(0) },
  ];
  const out = new Uint8Array(2);
  mean.execute(inputs, [{ ...info, shape: [2], data: out }]);
  deepStrictEqual([...out], [1, 5]);
});
