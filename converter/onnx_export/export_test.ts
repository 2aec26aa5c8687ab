/**
 * Each NNAPI operation the exporter writes, run by the reference kernel and, exported to
 * ONNX, by onnxruntime-node on the same seeded inputs: the same shapes and values (float
 * sums in another order: 1e-5 relative).
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { exportsStep, exportSteps } from "./export.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { SubgraphOperand } from "../../driver/devices/device.ts";
import type { OperationType } from "../../nnapi/types.ts";
import { allocate, elementCount, type Tensor } from "../../nnapi/tensor.ts";
import { seededFloats } from "../../kernels/seeded_random.ts";

const f32 = (shape: number[], value?: ArrayLike<number>): SubgraphOperand => ({
  type: "TENSOR_FLOAT32",
  shape,
  scale: 0,
  zeroPoint: 0,
  ...(value ? { value: Float32Array.from(value) } : {}),
});
const i32 = (v: number): SubgraphOperand => ({
  type: "INT32",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  value: Int32Array.of(v),
});
const bool = (v: boolean): SubgraphOperand => ({
  type: "BOOL",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  value: Uint8Array.of(v ? 1 : 0),
});
const scalarF = (v: number): SubgraphOperand => ({
  type: "FLOAT32",
  shape: [],
  scale: 0,
  zeroPoint: 0,
  value: Float32Array.of(v),
});
const ints = (values: number[]): SubgraphOperand => ({
  type: "TENSOR_INT32",
  shape: [values.length],
  scale: 0,
  zeroPoint: 0,
  value: Int32Array.from(values),
});
const weights = (shape: number[], seed: number) =>
  f32(shape, seededFloats(elementCount(shape), seed, 2));

/**
 * Runs `type` on `inputs` (operands; those without a value get seeded values) with the
 * reference kernel and, exported, in onnxruntime; compares the output.
 */
async function agree(
  type: OperationType,
  inputs: SubgraphOperand[],
  what: string,
  tolerance = 1e-5,
) {
  const given = inputs.map((o, k) =>
    o.value !== undefined ? o : { ...o, value: seededFloats(elementCount(o.shape), 10 + k, 2) }
  );
  const definition = operationDefinition(type)!;
  const [shape] = definition.prepare(
    given.map((o) => ({ ...o, value: o.value })),
    [{ type: "TENSOR_FLOAT32", shape: [], scale: 0, zeroPoint: 0 }],
  );
  const output: Tensor = {
    type: "TENSOR_FLOAT32",
    shape,
    scale: 0,
    zeroPoint: 0,
    data: allocate("TENSOR_FLOAT32", elementCount(shape)),
  };
  definition.execute(given.map((o) => ({ ...o, data: o.value ?? null })), [output]);

  const operands = [
    ...given.map((o, k) => inputs[k].value !== undefined ? o : { ...o, value: undefined }),
    {
      type: "TENSOR_FLOAT32" as const,
      shape,
      scale: 0,
      zeroPoint: 0,
    },
  ];
  const step = { type, inputs: inputs.map((_, k) => k), outputs: [inputs.length] };
  ok(exportsStep(step, operands), `${what}: the exporter claims it`);
  const runtime = inputs.flatMap((o, k) => o.value === undefined ? [k] : []);
  const { bytes } = exportSteps([step], operands, { inputs: runtime, outputs: [inputs.length] });
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  const feeds = Object.fromEntries(runtime.map((k) => [
    `o${k}`,
    new ort.Tensor("float32", given[k].value as Float32Array, given[k].shape),
  ]));
  const result = await session.run(feeds);
  await session.release();
  const got = result[`o${inputs.length}`];
  deepStrictEqual([...got.dims], shape, `${what}: shape`);
  const want = output.data as Float32Array;
  const actual = got.data as Float32Array;
  want.forEach((w, i) => {
    const error = Math.abs(actual[i] - w);
    ok(error <= tolerance * Math.max(1, Math.abs(w)), `${what}[${i}]: ${actual[i]} vs ${w}`);
  });
}

Deno.test("element-wise operations with broadcasting and fused activations", async () => {
  await agree("ADD", [f32([2, 3]), f32([3]), i32(3)], "ADD + RELU6");
  await agree("MUL", [f32([1, 4]), f32([2, 1]), i32(2)], "MUL + RELU1");
  await agree("SUB", [f32([2, 3]), f32([2, 3]), i32(1)], "SUB + RELU");
  await agree("DIV", [f32([2, 3]), weights([1], 5), i32(0)], "DIV by a constant");
  for (const type of ["RELU", "RELU1", "RELU6", "LOGISTIC", "TANH", "HARD_SWISH"] as const) {
    await agree(type, [f32([2, 5])], type);
  }
});

Deno.test("CONV_2D and DEPTHWISE_CONV_2D: implicit and explicit padding, strides, dilation, NCHW", async () => {
  const filter = weights([4, 3, 3, 3], 1);
  const bias = weights([4], 2);
  // implicit SAME (1), stride 2, RELU6
  await agree(
    "CONV_2D",
    [f32([1, 7, 6, 3]), filter, bias, i32(1), i32(2), i32(2), i32(3)],
    "SAME/2",
  );
  // explicit pads l1 r0 t2 b1, strides 1, no activation, NHWC, dilation 2
  await agree("CONV_2D", [
    f32([2, 8, 9, 3]),
    filter,
    bias,
    i32(1),
    i32(0),
    i32(2),
    i32(1),
    i32(1),
    i32(1),
    i32(0),
    bool(false),
    i32(2),
    i32(2),
  ], "explicit, dilated");
  // NCHW: implicit VALID (2), stride 1, RELU
  await agree("CONV_2D", [
    f32([1, 3, 6, 5]),
    filter,
    bias,
    i32(2),
    i32(1),
    i32(1),
    i32(1),
    bool(true),
  ], "NCHW");
  // depthwise, multiplier 2, implicit VALID, RELU
  await agree("DEPTHWISE_CONV_2D", [
    f32([1, 5, 5, 3]),
    weights([1, 3, 3, 6], 3),
    weights([6], 4),
    i32(2),
    i32(1),
    i32(1),
    i32(2),
    i32(1),
  ], "depthwise x2");
  // depthwise, multiplier 1, SAME, stride 2, RELU6 (MobileNet's)
  await agree("DEPTHWISE_CONV_2D", [
    f32([1, 7, 7, 4]),
    weights([1, 3, 3, 4], 5),
    weights([4], 6),
    i32(1),
    i32(2),
    i32(2),
    i32(1),
    i32(3),
  ], "depthwise SAME/2");
});

Deno.test("TRANSPOSE_CONV_2D: explicit padding, and implicit SAME where the padding is not negative", async () => {
  const filter = weights([2, 3, 3, 3], 11);
  const bias = weights([2], 12);
  await agree("TRANSPOSE_CONV_2D", [
    f32([1, 4, 5, 3]),
    filter,
    bias,
    i32(1),
    i32(1),
    i32(1),
    i32(1),
    i32(2),
    i32(2),
    i32(1),
    bool(false),
  ], "explicit, stride 2, RELU");
  await agree("TRANSPOSE_CONV_2D", [
    f32([1, 4, 5, 3]),
    filter,
    bias,
    ints([1, 8, 10, 2]),
    i32(1),
    i32(2),
    i32(2),
    i32(0),
    bool(false),
  ], "implicit SAME, stride 2");
});

Deno.test("pools, FULLY_CONNECTED, SOFTMAX, RESHAPE, CONCATENATION, TRANSPOSE, MEAN", async () => {
  // average pool 3x3 / 2 SAME: the padding is not counted, as NNAPI averages
  await agree("AVERAGE_POOL_2D", [
    f32([1, 5, 6, 2]),
    i32(1),
    i32(2),
    i32(2),
    i32(3),
    i32(3),
    i32(0),
  ], "avg SAME");
  await agree("MAX_POOL_2D", [
    f32([1, 5, 6, 2]),
    i32(1),
    i32(0),
    i32(0),
    i32(1),
    i32(2),
    i32(2),
    i32(2),
    i32(2),
    i32(3),
  ], "max explicit + RELU6");
  await agree(
    "FULLY_CONNECTED",
    [f32([2, 3, 4]), weights([5, 12], 7), weights([5], 8), i32(1)],
    "FC + RELU",
  );
  await agree("SOFTMAX", [f32([2, 5]), scalarF(0.5)], "softmax beta 0.5");
  await agree("SOFTMAX", [f32([2, 3, 4]), scalarF(1), i32(1)], "softmax axis 1");
  await agree("RESHAPE", [f32([2, 6]), ints([3, -1])], "reshape");
  await agree("CONCATENATION", [f32([2, 3]), f32([2, 2]), i32(1)], "concat");
  await agree("TRANSPOSE", [f32([2, 3, 4]), ints([2, 0, 1])], "transpose");
  await agree("MEAN", [f32([2, 3, 4, 5]), ints([1, 2]), i32(1)], "mean");
});

Deno.test("RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR: whole scale factors (written as ONNX scales), other factors and sizes, each coordinate mode, NHWC and NCHW", async () => {
  const flags = (
    nchw: boolean,
    align: boolean,
    half: boolean,
  ) => [bool(nchw), bool(align), bool(half)];
  for (const type of ["RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"] as const) {
    for (const [align, half] of [[false, false], [true, false], [false, true]]) {
      const mode = align ? "align corners" : half ? "half pixel" : "asymmetric";
      await agree(
        type,
        [f32([1, 3, 4, 2]), scalarF(2), scalarF(3), ...flags(false, align, half)],
        `${type} x2 x3 NHWC ${mode}`,
      );
      await agree(
        type,
        [f32([1, 2, 3, 5]), scalarF(2), scalarF(2), ...flags(true, align, half)],
        `${type} x2 NCHW ${mode}`,
      );
      await agree(
        type,
        [f32([1, 3, 5, 2]), scalarF(1.5), scalarF(2), ...flags(false, align, half)],
        `${type} x1.5 NHWC ${mode}`,
      );
      await agree(
        type,
        [f32([1, 3, 5, 2]), i32(7), i32(4), ...flags(false, align, half)],
        `${type} to 4x7 NHWC ${mode}`,
      );
    }
  }
});

Deno.test("SLICE and STRIDED_SLICE to the end of an axis (written without its extent) and short of it", async () => {
  await agree("SLICE", [f32([2, 5, 4]), ints([0, 1, 2]), ints([-1, -1, 2])], "slice to the end");
  await agree("SLICE", [f32([2, 5, 4]), ints([1, 0, 1]), ints([1, 3, -1])], "slice short of it");
  // begin, end, strides, begin mask, end mask, shrink mask.
  const strided = (begin: number[], end: number[], strides: number[], masks: number[]) => [
    f32([3, 7, 4]),
    ints(begin),
    ints(end),
    ints(strides),
    ...masks.map(i32),
  ];
  await agree("STRIDED_SLICE", strided([0, 1, 0], [3, 7, 4], [1, 3, 2], [0, 0, 0]), "ends at it");
  await agree("STRIDED_SLICE", strided([0, 1, 0], [3, 99, 3], [1, 3, 2], [0, 0, 0]), "past it");
  await agree("STRIDED_SLICE", strided([0, 2, 1], [3, 6, 4], [2, 3, 2], [0, 0, 0]), "short");
  await agree("STRIDED_SLICE", strided([0, 0, 3], [3, 7, 4], [1, 1, 1], [1, 2, 4]), "masks");
  await agree("STRIDED_SLICE", strided([0, 6, 0], [3, 0, 4], [1, -2, 1], [0, 0, 0]), "backwards");
});

Deno.test("the exporter claims only what it writes exactly: float32, constant parameters", () => {
  const quant = { type: "TENSOR_QUANT8_ASYMM" as const, shape: [2], scale: 0.5, zeroPoint: 3 };
  const step = { type: "ADD" as const, inputs: [0, 1, 2], outputs: [3] };
  ok(!exportsStep(step, [quant, quant, i32(0), quant]), "quant8 ADD");
  const runtimeActivation = { type: "INT32" as const, shape: [], scale: 0, zeroPoint: 0 };
  ok(
    !exportsStep(step, [f32([2]), f32([2]), runtimeActivation, f32([2])]),
    "activation at execution",
  );
  ok(!exportsStep({ type: "L2_NORMALIZATION", inputs: [0], outputs: [1] }, [f32([2]), f32([2])]));
});

Deno.test("BATCH_MATMUL, with and without adjoints", async () => {
  await agree("BATCH_MATMUL", [f32([2, 3, 4]), f32([2, 4, 5])], "batched");
  await agree(
    "BATCH_MATMUL",
    [f32([2, 4, 3]), f32([2, 5, 4]), bool(true), bool(true)],
    "both adjoint",
  );
});

Deno.test("shape arithmetic in int32: SHAPE, GATHER, MUL, ADD, CONCATENATION, and RESHAPE to the shape it computes", async () => {
  const tensor = (type: "TENSOR_INT32" | "TENSOR_FLOAT32", shape: number[]) => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
  });
  // 0 x [2, 3, 4]; 1 SHAPE(x) [3]; 2 axis 0; 3 indices [0]; 4 GATHER -> [1]; 5 const [2];
  // 6 NONE; 7 MUL -> [1]; 8 const [0]; 9 ADD -> [1]; 10 const [-1]; 11 CONCAT -> [2];
  // 12 RESHAPE(x, 11) -> [4, 6]
  const operands: SubgraphOperand[] = [
    tensor("TENSOR_FLOAT32", [2, 3, 4]),
    tensor("TENSOR_INT32", [3]),
    i32(0),
    ints([0]),
    tensor("TENSOR_INT32", [1]),
    ints([2]),
    i32(0),
    tensor("TENSOR_INT32", [1]),
    ints([0]),
    tensor("TENSOR_INT32", [1]),
    ints([-1]),
    tensor("TENSOR_INT32", [2]),
    tensor("TENSOR_FLOAT32", [4, 6]),
  ];
  const steps = [
    { type: "SHAPE" as const, inputs: [0], outputs: [1] },
    { type: "GATHER" as const, inputs: [1, 2, 3], outputs: [4] },
    { type: "MUL" as const, inputs: [4, 5, 6], outputs: [7] },
    { type: "ADD" as const, inputs: [8, 7, 6], outputs: [9] },
    { type: "CONCATENATION" as const, inputs: [9, 10, 2], outputs: [11] },
    { type: "RESHAPE" as const, inputs: [0, 11], outputs: [12] },
  ];
  for (const step of steps) ok(exportsStep(step, operands), `${step.type} is claimed`);
  const { bytes } = exportSteps(steps, operands, { inputs: [0], outputs: [1, 11, 12] });
  const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
  const x = seededFloats(24, 3, 2);
  const result = await session.run({ o0: new ort.Tensor("float32", x, [2, 3, 4]) });
  await session.release();
  deepStrictEqual([...result.o1.data as Int32Array], [2, 3, 4]);
  deepStrictEqual([...result.o11.data as Int32Array], [4, -1]);
  deepStrictEqual([...result.o12.dims], [4, 6]);
  deepStrictEqual([...result.o12.data as Float32Array], [...x]);
  // RANGE to a computed limit and CAST to float32: 0, 1, 2, 3 from [4, -1]'s first value.
  const more: SubgraphOperand[] = [
    ...operands,
    ints([0]),
    tensor("TENSOR_INT32", [1]),
    ints([1]),
    tensor("TENSOR_INT32", [4]),
    tensor("TENSOR_FLOAT32", [4]),
  ];
  const counted = [
    ...steps.slice(0, 5),
    { type: "SLICE" as const, inputs: [11, 3, 15], outputs: [14] },
    { type: "RANGE" as const, inputs: [13, 14, 15], outputs: [16] },
    { type: "CAST" as const, inputs: [16], outputs: [17] },
  ];
  for (const step of counted) ok(exportsStep(step, more), `${step.type} is claimed`);
  const countedBytes = exportSteps(counted, more, { inputs: [0], outputs: [16, 17] }).bytes;
  const counting = await ort.InferenceSession.create(countedBytes, { intraOpNumThreads: 1 });
  const counts = await counting.run({ o0: new ort.Tensor("float32", x, [2, 3, 4]) });
  await counting.release();
  deepStrictEqual([...counts.o16.data as Int32Array], [0, 1, 2, 3]);
  deepStrictEqual([...counts.o17.data as Float32Array], [0, 1, 2, 3]);
  // NNAPI's int32 division floors where ONNX's truncates: not claimed.
  const division = { type: "DIV" as const, inputs: [4, 5, 6], outputs: [7] };
  ok(!exportsStep(division, operands), "int32 DIV");
});

Deno.test("LOG_SOFTMAX, ARGMAX and ARGMIN (the first index on ties), and the logical operations", async () => {
  await agree("LOG_SOFTMAX", [f32([2, 5]), scalarF(0.5), i32(-1)], "log softmax beta 0.5");
  await agree("LOG_SOFTMAX", [f32([3, 4, 2]), scalarF(1), i32(1)], "log softmax axis 1");
  const tensor = (type: "TENSOR_INT32" | "TENSOR_FLOAT32" | "TENSOR_BOOL8", shape: number[]) => ({
    type,
    shape,
    scale: 0,
    zeroPoint: 0,
  });
  const run = async (
    steps: { type: OperationType; inputs: number[]; outputs: number[] }[],
    operands: SubgraphOperand[],
    feeds: Record<string, InstanceType<typeof ort.Tensor>>,
    outputs: number[],
  ) => {
    for (const step of steps) ok(exportsStep(step, operands), `${step.type} is claimed`);
    const inputs = Object.keys(feeds).map((name) => Number(name.slice(1)));
    const { bytes } = exportSteps(steps, operands, { inputs, outputs });
    const session = await ort.InferenceSession.create(bytes, { intraOpNumThreads: 1 });
    const result = await session.run(feeds);
    await session.release();
    return result;
  };
  // [[3, 1, 3], [-2, 5, 5]]: ties go to the first index in NNAPI and in ONNX.
  const values = Float32Array.of(3, 1, 3, -2, 5, 5);
  const arg = await run(
    [
      { type: "ARGMAX", inputs: [0, 1], outputs: [2] },
      { type: "ARGMIN", inputs: [0, 3], outputs: [4] },
    ],
    [
      tensor("TENSOR_FLOAT32", [2, 3]),
      i32(1),
      tensor("TENSOR_INT32", [2]),
      i32(0),
      tensor("TENSOR_INT32", [3]),
    ],
    { o0: new ort.Tensor("float32", values, [2, 3]) },
    [2, 4],
  );
  deepStrictEqual([...arg.o2.data as Int32Array], [0, 1]);
  deepStrictEqual([...arg.o4.data as Int32Array], [1, 0, 0]);
  const bools = (...v: number[]) => new ort.Tensor("bool", Uint8Array.from(v), [v.length]);
  const logic = await run(
    [
      { type: "LOGICAL_AND", inputs: [0, 1], outputs: [2] },
      { type: "LOGICAL_OR", inputs: [0, 1], outputs: [3] },
      { type: "LOGICAL_NOT", inputs: [0], outputs: [4] },
    ],
    [0, 1, 2, 3, 4].map(() => tensor("TENSOR_BOOL8", [4])),
    { o0: bools(0, 0, 1, 1), o1: bools(0, 1, 0, 1) },
    [2, 3, 4],
  );
  deepStrictEqual([...logic.o2.data as Uint8Array].map(Number), [0, 0, 0, 1]);
  deepStrictEqual([...logic.o3.data as Uint8Array].map(Number), [0, 1, 1, 1]);
  deepStrictEqual([...logic.o4.data as Uint8Array].map(Number), [1, 1, 0, 0]);
});

Deno.test("DYNAMIC_QUANTIZE_FULLY_CONNECTED: onnxruntime's DynamicQuantizeMatMul gives the reference's values bit for bit; signed weights are not claimed", async () => {
  const quant8 = (shape: number[], scale: number, zeroPoint: number, seed: number) => ({
    type: "TENSOR_QUANT8_ASYMM" as const,
    shape,
    scale,
    zeroPoint,
    value: Uint8Array.from(seededFloats(elementCount(shape), seed, 1), (v) => (v + 1) * 127.5),
  });
  const input = f32([2, 3, 300]);
  // An inner extent past 256, one zero point at 0 and one inside the range, bias and none.
  await agree(
    "DYNAMIC_QUANTIZE_FULLY_CONNECTED",
    [
      input,
      quant8([5, 300], 0.02, 131, 3),
      weights([5], 4),
      i32(0),
    ],
    "biased",
    0,
  );
  await agree(
    "DYNAMIC_QUANTIZE_FULLY_CONNECTED",
    [
      f32([4, 8]),
      quant8([6, 8], 0.5, 0, 5),
      f32([6], new Float32Array(6)),
      i32(1),
    ],
    "no bias, RELU",
    0,
  );
  const signed = { ...quant8([6, 8], 0.5, 0, 5), type: "TENSOR_QUANT8_ASYMM_SIGNED" as const };
  const operands = [
    f32([4, 8]),
    { ...signed, value: new Int8Array(48) },
    f32([6], new Float32Array(6)),
    i32(0),
    f32([4, 6]),
  ];
  const step = {
    type: "DYNAMIC_QUANTIZE_FULLY_CONNECTED" as const,
    inputs: [0, 1, 2, 3],
    outputs: [4],
  };
  ok(!exportsStep(step, operands), "signed weights");
});
