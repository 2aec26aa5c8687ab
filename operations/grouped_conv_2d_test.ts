import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import { groupedConv2d } from "./grouped_conv_2d.ts";
import type { DeclaredOperand, OperationSignature, PrepareInput } from "./operation.ts";
import { OperationError } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  scale = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint: 0, lifetime: "CONSTANT_COPY" };
}

/** The implicit form: 1x3x3x4 input, 2 groups of 2 channels, 4 output channels. */
function implicitSignature(
  options: { inputType?: OperandType; inputDims?: number[]; layoutType?: OperandType } = {},
): OperationSignature {
  const type = options.inputType ?? "TENSOR_FLOAT32";
  return {
    type: "GROUPED_CONV_2D",
    inputs: [
      operand(0, type, options.inputDims ?? [1, 3, 3, 4]),
      operand(1, type, [4, 2, 2, 2]),
      operand(2, type, [4]),
      ...["INT32", "INT32", "INT32", "INT32", "INT32"].map((t, i) =>
        operand(3 + i, t as OperandType, [])
      ),
      operand(8, options.layoutType ?? "BOOL", []),
    ],
    outputs: [operand(9, type, [1, 2, 2, 4])],
  };
}

function rejects(fn: () => unknown, pattern: RegExp) {
  throws(fn, (e) => e instanceof OperationError && pattern.test(e.message));
}

function scalar(v: number, type: OperandType = "INT32"): PrepareInput {
  const value = type === "BOOL" ? new Uint8Array([v]) : new Int32Array([v]);
  return { type, shape: [], scale: 0, zeroPoint: 0, value };
}

function tensor(shape: number[]): PrepareInput {
  return { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, value: undefined };
}

Deno.test("groupedConv2d.validate() accepts the implicit and explicit forms as HAL 1.2", () => {
  strictEqual(groupedConv2d.validate(implicitSignature()), "V1_2");
  const sig = implicitSignature();
  const explicit: OperationSignature = {
    ...sig,
    inputs: [
      ...sig.inputs.slice(0, 3),
      ...Array.from({ length: 8 }, (_, i) => operand(3 + i, "INT32", [])),
      operand(11, "BOOL", []),
    ],
  };
  strictEqual(groupedConv2d.validate(explicit), "V1_2");
});

Deno.test("groupedConv2d.validate() names the faulty input count, type and rank", () => {
  const sig = implicitSignature();
  rejects(
    () => groupedConv2d.validate({ ...sig, inputs: sig.inputs.slice(0, 8) }),
    /expected 9 or 12 inputs, got 8/,
  );
  rejects(
    () => groupedConv2d.validate(implicitSignature({ inputType: "TENSOR_INT32" })),
    /input 0 .*unsupported type TENSOR_INT32/,
  );
  rejects(
    () => groupedConv2d.validate(implicitSignature({ layoutType: "INT32" })),
    /input 8 .*type INT32, expected BOOL/,
  );
  rejects(
    () => groupedConv2d.validate(implicitSignature({ inputDims: [3, 3, 4] })),
    /input 0 .*rank 3, expected 4/,
  );
});

Deno.test("groupedConv2d.prepare() infers the output and checks the group split", () => {
  const params = (groups: number) => [
    scalar(2), // VALID
    scalar(1),
    scalar(1),
    scalar(groups),
    scalar(0),
    scalar(0, "BOOL"),
  ];
  deepStrictEqual(
    groupedConv2d.prepare(
      [tensor([1, 3, 3, 4]), tensor([6, 2, 2, 2]), tensor([6]), ...params(2)],
      [],
    ),
    [[1, 2, 2, 6]],
  );
  rejects(
    () =>
      groupedConv2d.prepare(
        [tensor([1, 3, 3, 4]), tensor([6, 2, 2, 2]), tensor([6]), ...params(3)],
        [],
      ),
    /expected 4 input channels \/ 3 groups/,
  );
  rejects(
    () =>
      groupedConv2d.prepare(
        [tensor([1, 3, 3, 4]), tensor([6, 2, 2, 2]), tensor([6]), ...params(0)],
        [],
      ),
    /number of groups\) is 0/,
  );
});
