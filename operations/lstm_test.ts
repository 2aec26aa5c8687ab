import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import type { OperandType } from "../nnapi/types.ts";
import type { TensorData } from "../nnapi/tensor.ts";
import { lstm } from "./lstm.ts";
import {
  type DeclaredOperand,
  OperationError,
  type OperationSignature,
  type PrepareInput,
  ValueNotYetKnown,
} from "./operation.ts";

const nBatch = 2, nInput = 3, nCell = 4, nOutput = 4;

function declared(type: OperandType, dimensions: number[], index: number): DeclaredOperand {
  return { index, type, dimensions, scale: 0, zeroPoint: 0, lifetime: "MODEL_INPUT" };
}

function signature(inputCount = 23, type: OperandType = "TENSOR_FLOAT32"): OperationSignature {
  const scalar: OperandType = type === "TENSOR_FLOAT32" ? "FLOAT32" : "FLOAT16";
  const inputs = Array.from({ length: inputCount }, (_, i) => {
    if (i === 20) return declared("INT32", [], i);
    if (i === 21 || i === 22) return declared(scalar, [], i);
    return declared(type, [], i);
  });
  const outputs = [0, 1, 2, 3].map((i) => declared(type, [], 30 + i));
  return { type: "LSTM", inputs, outputs };
}

/** Prepare inputs of a full (non-CIFG, no peephole/projection) LSTM; `omit` lists absent inputs. */
function prepareInputs(omit: number[] = [], count = 23): PrepareInput[] {
  const shapes: number[][] = [
    [nBatch, nInput],
    ...Array(4).fill([nCell, nInput]),
    ...Array(4).fill([nCell, nOutput]),
    ...Array(3).fill([nCell]),
    ...Array(4).fill([nCell]),
    [nOutput, nCell],
    [nOutput],
    [nBatch, nOutput],
    [nBatch, nCell],
    [],
    [],
    [],
    ...Array(4).fill([nCell]),
  ];
  const absentByDefault = [9, 10, 11, 16, 17, 23, 24, 25, 26];
  return shapes.slice(0, count).map((shape, i) => {
    const scalar = i >= 20 && i <= 22;
    const absent = omit.includes(i) || (absentByDefault.includes(i) && !omit.includes(-i));
    const value: TensorData | null = absent
      ? null
      : i === 20
      ? new Int32Array([4])
      : new Float32Array(scalar ? 1 : shape.reduce((a, b) => a * b, 1));
    return { type: i === 20 ? "INT32" : "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, value };
  });
}

Deno.test("lstm.validate() accepts the HAL 1.0 form as V1_0 and the layer-norm form as V1_2", () => {
  strictEqual(lstm.validate(signature()), "V1_0");
  strictEqual(lstm.validate(signature(27)), "V1_2");
  strictEqual(lstm.validate(signature(23, "TENSOR_FLOAT16")), "V1_2");
});

Deno.test("lstm.validate() rejects other input counts and quantized inputs", () => {
  throws(() => lstm.validate(signature(24)), OperationError);
  throws(() => lstm.validate(signature(23, "TENSOR_QUANT8_ASYMM")), OperationError);
});

Deno.test("lstm.validate() rejects a float32 model with float16 clipping scalars", () => {
  const s = signature();
  const inputs = [...s.inputs];
  inputs[21] = declared("FLOAT16", [], 21);
  throws(() => lstm.validate({ ...s, inputs }), /input 21/);
});

Deno.test("lstm.prepare() infers [batch, 4 * cells] scratch and state shapes", () => {
  deepStrictEqual(lstm.prepare(prepareInputs(), []), [
    [nBatch, nCell * 4],
    [nBatch, nOutput],
    [nBatch, nCell],
    [nBatch, nOutput],
  ]);
});

Deno.test("lstm.prepare() sizes the scratch buffer for three gates under CIFG", () => {
  const shapes = lstm.prepare(prepareInputs([1, 5, 12]), []);
  deepStrictEqual(shapes[0], [nBatch, nCell * 3]);
});

Deno.test("lstm.prepare() treats an empty optional value like an omitted one", () => {
  const inputs = prepareInputs();
  for (const i of [1, 5, 12]) inputs[i] = { ...inputs[i], shape: [0], value: new Float32Array(0) };
  deepStrictEqual(lstm.prepare(inputs, [])[0], [nBatch, nCell * 3]);
});

Deno.test("lstm.prepare() waits for execution when an optional input is not known yet", () => {
  const inputs = prepareInputs();
  inputs[9] = { ...inputs[9], value: undefined };
  throws(() => lstm.prepare(inputs, []), ValueNotYetKnown);
});

Deno.test("lstm.prepare() rejects input-gate weights without recurrent input weights", () => {
  throws(() => lstm.prepare(prepareInputs([5]), []), /both present or both omitted/);
});

Deno.test("lstm.prepare() rejects partial peephole weights", () => {
  throws(() => lstm.prepare(prepareInputs([-10]), []), /peephole/);
});

Deno.test("lstm.prepare() rejects an input gate bias under CIFG", () => {
  throws(() => lstm.prepare(prepareInputs([1, 5]), []), /input_gate_bias/);
});

Deno.test("lstm.prepare() rejects a projection bias without projection weights", () => {
  throws(() => lstm.prepare(prepareInputs([-17]), []), /projection_bias/);
});

Deno.test("lstm.prepare() rejects weights whose input size differs from the input", () => {
  const inputs = prepareInputs();
  inputs[2] = { ...inputs[2], shape: [nCell, nInput + 1] };
  throws(() => lstm.prepare(inputs, []), /input_to_forget_weights/);
});

Deno.test("lstm.prepare() rejects a negative cell clip and an unsupported activation", () => {
  const inputs = prepareInputs();
  inputs[21] = { ...inputs[21], value: new Float32Array([-1]) };
  throws(() => lstm.prepare(inputs, []), /cell_clip/);
  const relu1 = prepareInputs();
  relu1[20] = { ...relu1[20], value: new Int32Array([2]) };
  throws(() => lstm.prepare(relu1, []), /activation/);
});

Deno.test("lstm.prepare() requires all four layer-norm weights without CIFG", () => {
  deepStrictEqual(lstm.prepare(prepareInputs([-23, -24, -25, -26], 27), [])[0], [nBatch, 16]);
  throws(() => lstm.prepare(prepareInputs([-24, -25, -26], 27), []), /layer normalization/);
});
