import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { concatenation } from "./concatenation.ts";
import { type DeclaredOperand, OperationError, type PrepareInput } from "./operation.ts";

function declared(
  type: OperandType,
  dimensions: number[],
  index: number,
  scale = 0,
  zeroPoint = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint, lifetime: "MODEL_INPUT" };
}

function quantSignature(scales: number[], outScale: number) {
  return {
    type: "CONCATENATION" as const,
    inputs: [
      ...scales.map((s, i) => declared("TENSOR_QUANT8_ASYMM", [2, 3], i, s)),
      declared("INT32", [], scales.length),
    ],
    outputs: [declared("TENSOR_QUANT8_ASYMM", [0, 0], 9, outScale)],
  };
}

function prepareInputs(shapes: number[][], axis: number): PrepareInput[] {
  return [
    ...shapes.map((shape) => ({
      type: "TENSOR_FLOAT32" as const,
      shape,
      scale: 0,
      zeroPoint: 0,
      value: undefined,
    })),
    { type: "INT32", shape: [], scale: 0, zeroPoint: 0, value: new Int32Array([axis]) },
  ];
}

Deno.test("concatenation.validate() needs HAL 1.2 for quant8 inputs quantized unlike the output", () => {
  strictEqual(concatenation.validate(quantSignature([0.5, 0.5], 0.5)), "V1_0");
  strictEqual(concatenation.validate(quantSignature([0.5, 0.25], 0.5)), "V1_2");
});

Deno.test("concatenation.validate() rejects mixed input types and a missing axis", () => {
  const sig = quantSignature([0.5, 0.5], 0.5);
  const mixed = {
    ...sig,
    inputs: [sig.inputs[0], declared("TENSOR_FLOAT32", [2, 3], 1), sig.inputs[2]],
  };
  throws(() => concatenation.validate(mixed), OperationError);
  throws(() => concatenation.validate({ ...sig, inputs: [sig.inputs[0]] }), OperationError);
});

Deno.test("concatenation.prepare() sums the axis extents", () => {
  deepStrictEqual(concatenation.prepare(prepareInputs([[52, 230], [40, 230]], 0), []), [[92, 230]]);
  deepStrictEqual(concatenation.prepare(prepareInputs([[2, 1], [2, 3], [2, 2]], 1), []), [[2, 6]]);
});

Deno.test("concatenation.prepare() rejects a bad axis and mismatched extents or ranks", () => {
  throws(() => concatenation.prepare(prepareInputs([[2, 3], [2, 3]], 2), []), OperationError);
  throws(() => concatenation.prepare(prepareInputs([[2, 3], [2, 3]], -1), []), OperationError);
  throws(() => concatenation.prepare(prepareInputs([[2, 3], [3, 3]], 1), []), OperationError);
  throws(() => concatenation.prepare(prepareInputs([[2, 3], [2, 3, 1]], 0), []), OperationError);
});

Deno.test("concatenation.execute() requantizes quant8 inputs to the output quantization", () => {
  const q = (data: number[], scale: number, zeroPoint: number) => ({
    type: "TENSOR_QUANT8_ASYMM" as const,
    shape: [1, data.length],
    scale,
    zeroPoint,
    data: new Uint8Array(data),
  });
  const axis = {
    type: "INT32" as const,
    shape: [],
    scale: 0,
    zeroPoint: 0,
    data: new Int32Array([1]),
  };
  const out = { ...q([0, 0, 0, 0], 0.5, 10), shape: [1, 4] };
  concatenation.execute([q([10, 12], 0.5, 10), q([1, 3], 1, 0), axis], [out]);
  deepStrictEqual(Array.from(out.data), [10, 12, 12, 16]);
});
