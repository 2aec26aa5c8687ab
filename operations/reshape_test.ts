import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { TensorData } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import {
  type DeclaredOperand,
  OperationError,
  type PrepareInput,
  ValueNotYetKnown,
} from "./operation.ts";
import { reshape } from "./reshape.ts";

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function inputs(shape: number[], target: number[] | undefined): PrepareInput[] {
  return [
    { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, value: undefined },
    {
      type: "TENSOR_INT32",
      shape: [target?.length ?? 1],
      scale: 0,
      zeroPoint: 0,
      value: target ? new Int32Array(target) : undefined,
    },
  ];
}

Deno.test("reshape.validate() accepts float32/quant8 as V1_0 and float16 as V1_2", () => {
  const sig = (type: OperandType) => ({
    type: "RESHAPE" as const,
    inputs: [declared(type, [1, 9], 0), declared("TENSOR_INT32", [1], 1)],
    outputs: [declared(type, [9], 2)],
  });
  strictEqual(reshape.validate(sig("TENSOR_FLOAT32")), "V1_0");
  strictEqual(reshape.validate(sig("TENSOR_FLOAT16")), "V1_2");
  throws(() => reshape.validate(sig("TENSOR_INT32")), OperationError);
});

Deno.test("reshape.validate() rejects a quant8 output with another scale than the input", () => {
  const input = { ...declared("TENSOR_QUANT8_ASYMM", [9], 0), scale: 0.5 };
  const output = { ...declared("TENSOR_QUANT8_ASYMM", [3, 3], 2), scale: 0.25 };
  const sig = { type: "RESHAPE" as const, inputs: [input, declared("TENSOR_INT32", [2], 1)] };
  throws(() => reshape.validate({ ...sig, outputs: [output] }), OperationError);
  strictEqual(reshape.validate({ ...sig, outputs: [{ ...output, scale: 0.5 }] }), "V1_0");
});

Deno.test("reshape.prepare() infers the single -1 entry from the element count", () => {
  deepStrictEqual(reshape.prepare(inputs([1, 1, 3, 3], [-1]), []), [[9]]);
  deepStrictEqual(reshape.prepare(inputs([2, 3, 4], [4, -1, 2]), []), [[4, 3, 2]]);
  deepStrictEqual(reshape.prepare(inputs([2, 3, 4], [6, 4]), []), [[6, 4]]);
});

Deno.test("reshape.prepare() rejects two -1 entries, negative entries and count mismatches", () => {
  throws(() => reshape.prepare(inputs([2, 3], [-1, -1]), []), OperationError);
  throws(() => reshape.prepare(inputs([2, 3], [-2, -3]), []), OperationError);
  throws(() => reshape.prepare(inputs([2, 3], [4, -1]), []), OperationError);
  throws(() => reshape.prepare(inputs([2, 3], [7]), []), OperationError);
});

Deno.test("reshape.prepare() waits for a shape that is a model input", () => {
  throws(() => reshape.prepare(inputs([9], undefined), []), ValueNotYetKnown);
});

Deno.test("reshape.execute() copies the data and checks the runtime shape against the output", () => {
  const input = { type: "TENSOR_FLOAT32" as const, shape: [2, 2], scale: 0, zeroPoint: 0 };
  const shape = (v: number[]) => ({
    type: "TENSOR_INT32" as const,
    shape: [v.length],
    scale: 0,
    zeroPoint: 0,
    data: new Int32Array(v) as TensorData,
  });
  const out = new Float32Array(4);
  const output = { type: "TENSOR_FLOAT32" as const, shape: [4], scale: 0, zeroPoint: 0, data: out };
  reshape.execute([{ ...input, data: new Float32Array([1, 2, 3, 4]) }, shape([-1])], [output]);
  deepStrictEqual(Array.from(out), [1, 2, 3, 4]);
  throws(
    () => reshape.execute([{ ...input, data: new Float32Array(4) }, shape([2, 2])], [output]),
    OperationError,
  );
});
