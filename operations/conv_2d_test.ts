import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { fromNumbers, type Tensor } from "../nnapi/tensor.ts";
import type { OperandType } from "../nnapi/types.ts";
import { conv2d } from "./conv_2d.ts";
import type { DeclaredOperand, OperationSignature, PrepareInput } from "./operation.ts";
import { OperationError, ValueNotYetKnown } from "./operation.ts";

function operand(
  index: number,
  type: OperandType,
  dimensions: number[],
  scale = 0,
  zeroPoint = 0,
): DeclaredOperand {
  return { index, type, dimensions, scale, zeroPoint, lifetime: "CONSTANT_COPY" };
}

function signature(inputs: DeclaredOperand[], output: DeclaredOperand): OperationSignature {
  return { type: "CONV_2D", inputs, outputs: [output] };
}

function scalars(types: OperandType[], first: number): DeclaredOperand[] {
  return types.map((t, i) => operand(first + i, t, []));
}

const INT7 = Array<OperandType>(7).fill("INT32");

Deno.test("conv2d.validate() accepts the explicit float32 form as HAL 1.0", () => {
  const sig = signature(
    [
      operand(0, "TENSOR_FLOAT32", [1, 3, 3, 1]),
      operand(1, "TENSOR_FLOAT32", [1, 2, 2, 1]),
      operand(2, "TENSOR_FLOAT32", [1]),
      ...scalars(INT7, 3),
    ],
    operand(10, "TENSOR_FLOAT32", [1, 2, 2, 1]),
  );
  strictEqual(conv2d.validate(sig), "V1_0");
});

Deno.test("conv2d.validate() needs HAL 1.2 for the NCHW flag", () => {
  const sig = signature(
    [
      operand(0, "TENSOR_FLOAT32", [1, 1, 3, 3]),
      operand(1, "TENSOR_FLOAT32", [1, 2, 2, 1]),
      operand(2, "TENSOR_FLOAT32", [1]),
      ...scalars(["INT32", "INT32", "INT32", "INT32", "BOOL"], 3),
    ],
    operand(8, "TENSOR_FLOAT32", [0, 0, 0, 0]),
  );
  strictEqual(conv2d.validate(sig), "V1_2");
});

Deno.test("conv2d.validate() needs HAL 1.2 when the quantized multiplier is >= 1", () => {
  const inputs = [
    operand(0, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 1, 0),
    operand(1, "TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], 1, 0),
    operand(2, "TENSOR_INT32", [1], 1, 0),
    ...scalars(INT7.slice(0, 4), 3),
  ];
  strictEqual(
    conv2d.validate(signature(inputs, operand(7, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 2))),
    "V1_0",
  );
  strictEqual(
    conv2d.validate(signature(inputs, operand(7, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 0.5))),
    "V1_2",
  );
});

Deno.test("conv2d.validate() rejects a quantized bias whose scale is not input x filter", () => {
  const sig = signature(
    [
      operand(0, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 0.5, 0),
      operand(1, "TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], 0.5, 0),
      operand(2, "TENSOR_INT32", [1], 0.5, 0),
      ...scalars(INT7.slice(0, 4), 3),
    ],
    operand(7, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 1),
  );
  throws(() => conv2d.validate(sig), /input 2 \(operand 2\) has scale 0.5/);
});

Deno.test("conv2d.validate() rejects a float bias for a quantized input", () => {
  const sig = signature(
    [
      operand(0, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 0.5, 0),
      operand(1, "TENSOR_QUANT8_ASYMM", [1, 2, 2, 1], 0.5, 0),
      operand(2, "TENSOR_FLOAT32", [1]),
      ...scalars(INT7.slice(0, 4), 3),
    ],
    operand(7, "TENSOR_QUANT8_ASYMM", [1, 3, 3, 1], 1),
  );
  throws(() => conv2d.validate(sig), /input 2 \(operand 2\) has type TENSOR_FLOAT32/);
});

Deno.test("conv2d.validate() rejects 9 inputs", () => {
  const sig = signature(
    [
      operand(0, "TENSOR_FLOAT32", [1, 3, 3, 1]),
      operand(1, "TENSOR_FLOAT32", [1, 2, 2, 1]),
      operand(2, "TENSOR_FLOAT32", [1]),
      ...scalars(INT7.slice(0, 6), 3),
    ],
    operand(9, "TENSOR_FLOAT32", [1, 2, 2, 1]),
  );
  throws(() => conv2d.validate(sig), OperationError);
});

function prepareInput(type: OperandType, shape: number[], values?: number[]): PrepareInput {
  return {
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
    value: values ? fromNumbers(type, values) : undefined,
  };
}

function implicitInputs(
  inputShape: number[],
  filterShape: number[],
  scheme: number,
  stride: number,
  nchw?: boolean,
): PrepareInput[] {
  const inputs = [
    prepareInput("TENSOR_FLOAT32", inputShape),
    prepareInput("TENSOR_FLOAT32", filterShape),
    prepareInput("TENSOR_FLOAT32", [filterShape[0]]),
    prepareInput("INT32", [], [scheme]),
    prepareInput("INT32", [], [stride]),
    prepareInput("INT32", [], [stride]),
    prepareInput("INT32", [], [0]),
  ];
  if (nchw !== undefined) inputs.push(prepareInput("BOOL", [], [nchw ? 1 : 0]));
  return inputs;
}

const OUT = [{ type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 }];

Deno.test("conv2d.prepare() infers SAME and VALID output shapes", () => {
  const same = conv2d.prepare(implicitInputs([2, 5, 7, 3], [4, 3, 3, 3], 1, 2), OUT);
  const valid = conv2d.prepare(implicitInputs([2, 5, 7, 3], [4, 3, 3, 3], 2, 2), OUT);
  deepStrictEqual(same, [[2, 3, 4, 4]]);
  deepStrictEqual(valid, [[2, 2, 3, 4]]);
});

Deno.test("conv2d.prepare() reads and writes NCHW shapes when the layout flag is set", () => {
  deepStrictEqual(
    conv2d.prepare(implicitInputs([1, 3, 5, 7], [4, 3, 3, 3], 2, 1, true), OUT),
    [[1, 4, 3, 5]],
  );
});

Deno.test("conv2d.prepare() rejects a filter whose depth differs from the input", () => {
  throws(
    () => conv2d.prepare(implicitInputs([1, 5, 5, 3], [4, 3, 3, 2], 1, 1), OUT),
    /filter\) has depth 2, but the input has 3 channels/,
  );
});

Deno.test("conv2d.prepare() waits for strides that are model inputs", () => {
  const inputs = implicitInputs([1, 5, 5, 3], [4, 3, 3, 3], 1, 1);
  inputs[4] = prepareInput("INT32", []);
  throws(() => conv2d.prepare(inputs, OUT), ValueNotYetKnown);
});

function tensor(type: OperandType, shape: number[], values: number[]): Tensor {
  return { type, shape, scale: 0, zeroPoint: 0, data: fromNumbers(type, values) };
}

Deno.test("conv2d.execute() gives the same values for NCHW as for NHWC", () => {
  // Input 1x2x2x2 (NHWC) = channels (1,10), (2,20), (3,30), (4,40); 1x1 filter summing both.
  const filter = tensor("TENSOR_FLOAT32", [1, 1, 1, 2], [1, 0.5]);
  const bias = tensor("TENSOR_FLOAT32", [1], [0]);
  const params = [1, 1, 1, 0].map((v) => tensor("INT32", [], [v]));
  const nhwcOut = tensor("TENSOR_FLOAT32", [1, 2, 2, 1], [0, 0, 0, 0]);
  conv2d.execute([
    tensor("TENSOR_FLOAT32", [1, 2, 2, 2], [1, 10, 2, 20, 3, 30, 4, 40]),
    filter,
    bias,
    ...params,
  ], [nhwcOut]);
  const nchwOut = tensor("TENSOR_FLOAT32", [1, 1, 2, 2], [0, 0, 0, 0]);
  conv2d.execute([
    tensor("TENSOR_FLOAT32", [1, 2, 2, 2], [1, 2, 3, 4, 10, 20, 30, 40]),
    filter,
    bias,
    ...params,
    tensor("BOOL", [], [1]),
  ], [nchwOut]);
  deepStrictEqual(Array.from(nhwcOut.data!), [6, 12, 18, 24]);
  deepStrictEqual(Array.from(nchwOut.data!), [6, 12, 18, 24]);
});
