import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import type { DeclaredOperand, OperationSignature, PrepareInput } from "./operation.ts";
import { OperationError, ValueNotYetKnown } from "./operation.ts";
import { transposeConv2d } from "./transpose_conv_2d.ts";

function operand(index: number, type: OperandType, dimensions: number[]): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "CONSTANT_COPY" };
}

/** The implicit form: output shape tensor, padding code, strides, activation, layout. */
function implicitSignature(
  options: { inputType?: OperandType; inputDims?: number[]; shapeType?: OperandType } = {},
): OperationSignature {
  const type = options.inputType ?? "TENSOR_FLOAT32";
  return {
    type: "TRANSPOSE_CONV_2D",
    inputs: [
      operand(0, type, options.inputDims ?? [1, 2, 2, 1]),
      operand(1, type, [2, 3, 3, 1]),
      operand(2, type, [2]),
      operand(3, options.shapeType ?? "TENSOR_INT32", [4]),
      ...[4, 5, 6, 7].map((i) => operand(i, "INT32", [])),
      operand(8, "BOOL", []),
    ],
    outputs: [operand(9, type, [1, 4, 4, 2])],
  };
}

function rejects(fn: () => unknown, pattern: RegExp) {
  throws(fn, (e) => e instanceof OperationError && pattern.test(e.message));
}

function scalar(v: number, type: OperandType = "INT32"): PrepareInput {
  const value = type === "BOOL" ? new Uint8Array([v]) : new Int32Array([v]);
  return { type, shape: [], scale: 0, zeroPoint: 0, value };
}

function tensor(shape: number[], value?: Int32Array): PrepareInput {
  const type = value ? "TENSOR_INT32" : "TENSOR_FLOAT32";
  return { type, shape, scale: 0, zeroPoint: 0, value };
}

Deno.test("transposeConv2d.validate() accepts the implicit and explicit forms as HAL 1.2", () => {
  strictEqual(transposeConv2d.validate(implicitSignature()), "V1_2");
  const sig = implicitSignature();
  const explicit: OperationSignature = {
    ...sig,
    inputs: [
      ...sig.inputs.slice(0, 3),
      ...Array.from({ length: 7 }, (_, i) => operand(3 + i, "INT32", [])),
      operand(10, "BOOL", []),
    ],
  };
  strictEqual(transposeConv2d.validate(explicit), "V1_2");
});

Deno.test("transposeConv2d.validate() names the faulty input count, type and rank", () => {
  const sig = implicitSignature();
  rejects(
    () => transposeConv2d.validate({ ...sig, inputs: [...sig.inputs, operand(10, "INT32", [])] }),
    /expected 9 or 11 inputs, got 10/,
  );
  rejects(
    () => transposeConv2d.validate(implicitSignature({ inputType: "TENSOR_QUANT16_ASYMM" })),
    /input 0 .*unsupported type TENSOR_QUANT16_ASYMM/,
  );
  rejects(
    () => transposeConv2d.validate(implicitSignature({ shapeType: "INT32" })),
    /input 3 .*type INT32, expected TENSOR_INT32/,
  );
  rejects(
    () => transposeConv2d.validate(implicitSignature({ inputDims: [1, 2, 2] })),
    /input 0 .*rank 3, expected 4/,
  );
});

Deno.test("transposeConv2d.prepare() derives the output from strides and padding", () => {
  const input = tensor([1, 2, 2, 1]);
  const filter = tensor([2, 3, 3, 1]);
  const bias = tensor([2]);
  // Explicit: 2 * (2 - 1) + 3 - 0 - 1 = 4.
  const explicit = [0, 1, 0, 1, 2, 2, 0].map((v) => scalar(v));
  deepStrictEqual(
    transposeConv2d.prepare([input, filter, bias, ...explicit, scalar(0, "BOOL")], []),
    [[1, 4, 4, 2]],
  );
  // Implicit SAME against a [1, 4, 4, 2] output shape (tail padding fits the last stride).
  const shape = tensor([4], Int32Array.from([1, 4, 4, 2]));
  const implicit = [shape, scalar(1), scalar(2), scalar(2), scalar(0), scalar(0, "BOOL")];
  deepStrictEqual(transposeConv2d.prepare([input, filter, bias, ...implicit], []), [[1, 4, 4, 2]]);
  // The output shape is needed to resolve the padding.
  throws(
    () => transposeConv2d.prepare([input, filter, bias, tensor([4]), ...implicit.slice(1)], []),
    ValueNotYetKnown,
  );
  rejects(
    () =>
      transposeConv2d.prepare(
        [input, tensor([2, 3, 3, 5]), bias, ...explicit, scalar(0, "BOOL")],
        [],
      ),
    /filter\) has depth 5, but the input has 1 channels/,
  );
});
