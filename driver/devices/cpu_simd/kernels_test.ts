/**
 * CONV_2D, DEPTHWISE_CONV_2D, TRANSPOSE_CONV_2D and FULLY_CONNECTED pack constant float32 weights at
 * preparation and bind optimized kernels to them that agree with their reference kernels
 * (NHWC and NCHW, implicit and explicit padding, every fused activation), fall back to the
 * reference for shapes they were not planned for, and leave everything else alone;
 * FULLY_CONNECTED also takes weights computed at execution, and the arithmetic reads its
 * operands in the forms the SIMD kernels take.
 */
import { ok, strictEqual } from "node:assert/strict";
import { Executable } from "../../execution/executable.ts";
import { buildModel } from "../../model/model.ts";
import { ModelSchema } from "../../model/model_schema.ts";
import { prepareModel } from "../../compilation/prepare.ts";
import type { Tensor, TensorData } from "../../../nnapi/tensor.ts";
import type { OperandType } from "../../../nnapi/types.ts";
import { conv2d } from "../../../operations/conv_2d.ts";
import { depthwiseConv2d } from "../../../operations/depthwise_conv_2d.ts";
import { fullyConnected } from "../../../operations/fully_connected.ts";
import type { OperationDefinition, PrepareInput } from "../../../operations/operation.ts";
import type { StepImplementation } from "../device.ts";
import { conv2dSimd, depthwiseConv2dSimd } from "./convolution.ts";
import { fullyConnectedSimd } from "./fully_connected.ts";
import {
  hardSwishStep,
  maximumSimd,
  minimumSimd,
  mulSimd,
  SIMD_MIN_ELEMENTS,
  subSimd,
} from "./elementwise.ts";
import { hardSwish } from "../../../operations/hard_swish.ts";
import { maximum } from "../../../operations/maximum.ts";
import { minimum } from "../../../operations/minimum.ts";
import { mul } from "../../../operations/mul.ts";
import { sub } from "../../../operations/sub.ts";
import { transposeConv2d } from "../../../operations/transpose_conv_2d.ts";
import { transposeConv2dSimd } from "./transpose_conv.ts";

/** Seeded floats in [-1, 1) (a linear congruential generator). */
function randomFloats(length: number, seed: number): Float32Array {
  const out = new Float32Array(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state / 2147483648 - 1;
  }
  return out;
}

function operand(type: OperandType, shape: number[], data: TensorData | null): Tensor {
  return { type, shape, scale: 0, zeroPoint: 0, data };
}

const int32 = (v: number) => operand("INT32", [], Int32Array.of(v));
const bool = (v: boolean) => operand("BOOL", [], Uint8Array.of(v ? 1 : 0));

/** What `pack`/`bind` see: constants (all but input 0) carry their value. */
function planned(inputs: Tensor[]): PrepareInput[] {
  return inputs.map((t, i) => ({ ...t, value: i === 0 ? undefined : t.data }));
}

/** Packs, binds and runs the optimized kernel and the reference on the same tensors. */
function compare(
  definition: OperationDefinition,
  implementation: StepImplementation,
  inputs: Tensor[],
  outputShape: number[],
) {
  const outputInfo = operand("TENSOR_FLOAT32", outputShape, null);
  const [inferred] = definition.prepare(planned(inputs), [outputInfo]);
  strictEqual(inferred.join(), outputShape.join(), `${definition.type} output shape`);
  const step = { inputs: planned(inputs), outputs: [outputInfo] };
  ok(implementation.supports(step), `cpu-simd supports this ${definition.type}`);
  const packed = implementation.pack!(step);
  ok(packed && packed.length === 1, `${definition.type} packs its weights`);
  const kernel = implementation.bind(step, packed);
  ok(kernel, `${definition.type} binds an optimized kernel`);
  const length = outputShape.reduce((a, b) => a * b, 1);
  const want = operand("TENSOR_FLOAT32", outputShape, new Float32Array(length));
  const got = operand("TENSOR_FLOAT32", outputShape, new Float32Array(length).fill(NaN));
  definition.execute(inputs, [want]);
  kernel(inputs, [got]);
  const w = want.data as Float32Array, g = got.data as Float32Array;
  for (let i = 0; i < length; i++) {
    ok(
      Math.abs(g[i] - w[i]) <= 1e-5 + 1e-5 * Math.abs(w[i]),
      `${definition.type} element ${i}: ${g[i]} vs reference ${w[i]}`,
    );
  }
  return kernel;
}

Deno.test("conv2d binds packed kernels that match the reference in NHWC and NCHW", () => {
  const filter = operand("TENSOR_FLOAT32", [9, 3, 3, 5], randomFloats(9 * 3 * 3 * 5, 1));
  const bias = operand("TENSOR_FLOAT32", [9], randomFloats(9, 2));
  const nhwc = randomFloats(2 * 7 * 6 * 5, 3);
  for (const activation of [0, 1, 2, 3]) {
    // Implicit SAME, stride 2: [2, 7, 6, 5] -> [2, 4, 3, 9].
    compare(conv2d, conv2dSimd, [
      operand("TENSOR_FLOAT32", [2, 7, 6, 5], nhwc),
      filter,
      bias,
      ...[1, 2, 2, activation].map(int32),
    ], [2, 4, 3, 9]);
  }
  // Explicit padding (left 1, right 0, top 2, bottom 1), stride 1, NCHW, dilation 2.
  const nchw = randomFloats(1 * 5 * 8 * 9, 4);
  compare(conv2d, conv2dSimd, [
    operand("TENSOR_FLOAT32", [1, 5, 8, 9], nchw),
    filter,
    bias,
    ...[1, 0, 2, 1, 1, 1, 3].map(int32),
    bool(true),
    int32(2),
    int32(2),
  ], [1, 9, 7, 6]);
  // 1x1 stride 1: the pointwise GEMM path.
  compare(conv2d, conv2dSimd, [
    operand("TENSOR_FLOAT32", [1, 4, 5, 6], randomFloats(120, 5)),
    operand("TENSOR_FLOAT32", [10, 1, 1, 6], randomFloats(60, 6)),
    operand("TENSOR_FLOAT32", [10], randomFloats(10, 7)),
    ...[2, 1, 1, 3].map(int32),
  ], [1, 4, 5, 10]);
});

Deno.test("depthwiseConv2d binds packed kernels that match the reference", () => {
  const filter = operand("TENSOR_FLOAT32", [1, 3, 3, 12], randomFloats(108, 10));
  const bias = operand("TENSOR_FLOAT32", [12], randomFloats(12, 11));
  for (const activation of [0, 1, 2, 3]) {
    // Implicit SAME, stride 1, depth multiplier 3: [1, 5, 6, 4] -> [1, 5, 6, 12].
    compare(depthwiseConv2d, depthwiseConv2dSimd, [
      operand("TENSOR_FLOAT32", [1, 5, 6, 4], randomFloats(120, 12 + activation)),
      filter,
      bias,
      ...[1, 1, 1, 3, activation].map(int32),
    ], [1, 5, 6, 12]);
  }
  // NCHW, explicit padding, stride 2, multiplier 1.
  compare(depthwiseConv2d, depthwiseConv2dSimd, [
    operand("TENSOR_FLOAT32", [2, 12, 7, 7], randomFloats(2 * 12 * 49, 20)),
    filter,
    bias,
    ...[1, 1, 1, 1, 2, 2, 1, 1].map(int32),
    bool(true),
  ], [2, 12, 4, 4]);
});

Deno.test("fullyConnected binds a packed GEMM that matches the reference", () => {
  for (const activation of [0, 1, 2, 3]) {
    compare(fullyConnected, fullyConnectedSimd, [
      operand("TENSOR_FLOAT32", [3, 2, 10], randomFloats(60, 30 + activation)),
      operand("TENSOR_FLOAT32", [13, 20], randomFloats(260, 31)),
      operand("TENSOR_FLOAT32", [13], randomFloats(13, 32)),
      int32(activation),
    ], [3, 13]);
  }
});

Deno.test("fullyConnected with weights computed at execution repacks them each run and matches the reference", () => {
  // Attention's products: few rows and columns, units not a multiple of 8, and enough rows
  // for the row-band split; each case runs twice with other weights.
  for (const [rows, inputSize, units] of [[40, 36, 40], [3, 5, 13], [9, 16, 8]]) {
    const input = operand("TENSOR_FLOAT32", [rows, inputSize], randomFloats(rows * inputSize, 7));
    const weights = (seed: number) =>
      operand("TENSOR_FLOAT32", [units, inputSize], randomFloats(units * inputSize, seed));
    const bias = operand("TENSOR_FLOAT32", [units], randomFloats(units, 9));
    const runtime = (inputs: Tensor[]) => inputs.map((t) => ({ ...t, value: undefined }));
    const first = [input, weights(8), bias, int32(1)];
    const outputInfo = operand("TENSOR_FLOAT32", [rows, units], null);
    const step = {
      inputs: runtime(first).map((t, i) => i === 3 ? { ...t, value: t.data } : t),
      outputs: [outputInfo],
    };
    ok(
      fullyConnectedSimd.supports(step),
      `cpu-simd takes runtime weights [${units}, ${inputSize}]`,
    );
    strictEqual(fullyConnectedSimd.pack!(step), undefined, "nothing to pack at preparation");
    const kernel = fullyConnectedSimd.bind(step, []);
    ok(kernel, "a GEMM is bound");
    for (const inputs of [first, [input, weights(10), bias, int32(1)]]) {
      const want = operand("TENSOR_FLOAT32", [rows, units], new Float32Array(rows * units));
      const got = operand("TENSOR_FLOAT32", [rows, units], new Float32Array(rows * units));
      fullyConnected.execute(inputs, [want]);
      kernel(inputs, [got]);
      const w = want.data as Float32Array, g = got.data as Float32Array;
      for (let i = 0; i < w.length; i++) {
        ok(Math.abs(g[i] - w[i]) <= 1e-5 + 1e-5 * Math.abs(w[i]), `[${rows}x${units}] ${i}`);
      }
    }
  }
});

Deno.test("transposeConv2d binds a GEMM and scatter that match the reference: strides that overlap or not, padding, NCHW, both forms", () => {
  const filter = (fh: number, fw: number) =>
    operand("TENSOR_FLOAT32", [6, fh, fw, 3], randomFloats(6 * fh * fw * 3, 4));
  const bias = operand("TENSOR_FLOAT32", [6], randomFloats(6, 5));
  const nhwc = operand("TENSOR_FLOAT32", [2, 5, 4, 3], randomFloats(2 * 5 * 4 * 3, 6));
  const nchw = operand("TENSOR_FLOAT32", [2, 3, 5, 4], randomFloats(2 * 5 * 4 * 3, 6));
  for (const activation of [0, 1, 2, 3]) {
    // 2x2 at stride 2 (an upsampling head: no overlap), then 3x3 at stride 2 padded (overlap).
    compare(transposeConv2d, transposeConv2dSimd, [
      nhwc,
      filter(2, 2),
      bias,
      ...[0, 0, 0, 0, 2, 2, activation].map(int32),
      bool(false),
    ], [2, 10, 8, 6]);
    compare(transposeConv2d, transposeConv2dSimd, [
      nchw,
      filter(3, 3),
      bias,
      ...[1, 0, 1, 0, 2, 2, activation].map(int32),
      bool(true),
    ], [2, 6, 10, 8]);
  }
  // The implicit form: the output shape as a tensor, SAME padding, stride 1 x 2.
  compare(transposeConv2d, transposeConv2dSimd, [
    nhwc,
    filter(3, 2),
    bias,
    operand("TENSOR_INT32", [4], Int32Array.of(2, 5, 8, 6)),
    ...[1, 2, 1, 0].map(int32),
    bool(false),
  ], [2, 5, 8, 6]);
});

Deno.test("a packed kernel runs the reference for shapes it was not planned for", () => {
  const inputs = [
    operand("TENSOR_FLOAT32", [1, 2, 8], randomFloats(16, 40)),
    operand("TENSOR_FLOAT32", [5, 8], randomFloats(40, 41)),
    operand("TENSOR_FLOAT32", [5], randomFloats(5, 42)),
    int32(0),
  ];
  const kernel = compare(fullyConnected, fullyConnectedSimd, inputs, [2, 5]);
  const wider = [operand("TENSOR_FLOAT32", [3, 8], randomFloats(24, 43)), ...inputs.slice(1)];
  const want = operand("TENSOR_FLOAT32", [3, 5], new Float32Array(15));
  const got = operand("TENSOR_FLOAT32", [3, 5], new Float32Array(15));
  fullyConnected.execute(wider, [want]);
  kernel(wider, [got]);
  strictEqual([...got.data!].join(), [...want.data!].join());
});

Deno.test("non-constant filters and quantized operands keep the reference kernels", () => {
  const conv = [
    operand("TENSOR_FLOAT32", [1, 4, 4, 2], randomFloats(32, 50)),
    operand("TENSOR_FLOAT32", [3, 2, 2, 2], randomFloats(24, 51)),
    operand("TENSOR_FLOAT32", [3], randomFloats(3, 52)),
    ...[2, 1, 1, 0].map(int32),
  ];
  const out = [operand("TENSOR_FLOAT32", [1, 3, 3, 3], null)];
  const variable = planned(conv);
  variable[1] = { ...variable[1], value: undefined };
  strictEqual(conv2dSimd.supports({ inputs: variable, outputs: out }), false);
  strictEqual(conv2dSimd.pack!({ inputs: variable, outputs: out }), undefined);
  strictEqual(conv2dSimd.bind({ inputs: variable, outputs: out }, []), undefined);
  const stridesAtExecution = planned(conv);
  stridesAtExecution[4] = { ...stridesAtExecution[4], value: undefined };
  strictEqual(conv2dSimd.supports({ inputs: stridesAtExecution, outputs: out }), false);
  strictEqual(conv2dSimd.pack!({ inputs: stridesAtExecution, outputs: out }), undefined);
  const q8 = (shape: number[]): PrepareInput => ({
    type: "TENSOR_QUANT8_ASYMM",
    shape,
    scale: 0.5,
    zeroPoint: 128,
    value: new Uint8Array(shape.reduce((a, b) => a * b, 1)),
  });
  const quantized: PrepareInput[] = [
    { ...q8([1, 4, 4, 2]), value: undefined },
    q8([3, 2, 2, 2]),
    { type: "TENSOR_INT32", shape: [3], scale: 0.25, zeroPoint: 0, value: new Int32Array(3) },
    ...planned(conv).slice(3),
  ];
  strictEqual(conv2dSimd.supports({ inputs: quantized, outputs: out }), false);
  strictEqual(conv2dSimd.pack!({ inputs: quantized, outputs: out }), undefined);
  strictEqual(conv2dSimd.bind({ inputs: quantized, outputs: out }, []), undefined);
});

Deno.test("a prepared model packs its weights once and runs them like the reference", () => {
  const tensor = (dimensions: number[], lifetime: string, value?: Float32Array) => ({
    type: "TENSOR_FLOAT32",
    dimensions,
    lifetime,
    ...(value ? { value: [...value] } : {}),
  });
  const scalar = (v: number) => ({
    type: "INT32",
    dimensions: [],
    lifetime: "CONSTANT_COPY",
    value: [v],
  });
  // conv 3x3/2 SAME relu6 -> depthwise 3x3 x2 SAME relu6 -> pointwise -> fully connected.
  const model = buildModel(ModelSchema.parse({
    operands: [
      tensor([1, 9, 9, 3], "MODEL_INPUT"), // 0
      tensor([8, 3, 3, 3], "CONSTANT_COPY", randomFloats(216, 60)),
      tensor([8], "CONSTANT_COPY", randomFloats(8, 61)),
      scalar(1), // 3: SAME
      scalar(2), // 4: stride 2
      scalar(3), // 5: relu6
      tensor([1, 5, 5, 8], "TEMPORARY_VARIABLE"), // 6
      tensor([1, 3, 3, 16], "CONSTANT_COPY", randomFloats(144, 62)),
      tensor([16], "CONSTANT_COPY", randomFloats(16, 63)),
      scalar(1), // 9: stride 1
      scalar(2), // 10: depth multiplier 2
      tensor([1, 5, 5, 16], "TEMPORARY_VARIABLE"), // 11
      tensor([12, 1, 1, 16], "CONSTANT_COPY", randomFloats(192, 64)),
      tensor([12], "CONSTANT_COPY", randomFloats(12, 65)),
      scalar(0), // 14: no activation
      tensor([1, 5, 5, 12], "TEMPORARY_VARIABLE"), // 15
      tensor([10, 300], "CONSTANT_COPY", randomFloats(3000, 66)),
      tensor([10], "CONSTANT_COPY", randomFloats(10, 67)),
      tensor([1, 10], "MODEL_OUTPUT"), // 18
    ],
    operations: [
      { type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 4, 5], outputs: [6] },
      { type: "DEPTHWISE_CONV_2D", inputs: [6, 7, 8, 3, 9, 9, 10, 5], outputs: [11] },
      { type: "CONV_2D", inputs: [11, 12, 13, 3, 9, 9, 14], outputs: [15] },
      { type: "FULLY_CONNECTED", inputs: [15, 16, 17, 14], outputs: [18] },
    ],
    inputIndexes: [0],
    outputIndexes: [18],
  }));
  const prepared = prepareModel(model, { preference: "FAST_SINGLE_ANSWER", priority: "MEDIUM" });
  ok(prepared.steps.every((step) => step.device === "cpu-simd"), "cpu-simd runs every step");
  ok(prepared.steps.every((step) => step.packed?.length === 1), "every step packed its weights");
  const unpacked = { ...prepared, steps: prepared.steps.map(({ packed: _, ...step }) => step) };
  const input = [{ data: randomFloats(243, 68), shape: [1, 9, 9, 3] }];
  const [got] = new Executable(prepared).run(input);
  const [want] = new Executable(unpacked).run(input);
  const g = got.data as Float32Array, w = want.data as Float32Array;
  strictEqual(g.length, 10);
  for (let i = 0; i < 10; i++) {
    ok(Math.abs(g[i] - w[i]) <= 1e-5 + 1e-5 * Math.abs(w[i]), `output ${i}: ${g[i]} vs ${w[i]}`);
  }
});

Deno.test("arithmetic on cpu-simd reads a block of the output's trailing extents repeated over its leading ones, bit for bit with the reference", () => {
  const cases: [number[], number[], boolean][] = [
    [[1, 8, 40, 32], [1, 1, 40, 32], true], // a position table over attention heads
    [[1, 8, 40, 30], [40, 30], true], // a row whose width is not a multiple of 4
    [[4, 5, 7], [7], true], // a per-channel row
    [[4, 5, 7], [1], true], // one value
    [[1, 1, 40, 32], [1, 8, 40, 32], true], // the block on the left
    [[4, 5, 7], [4, 1, 7], false], // a middle axis broadcast: the reference's
  ];
  for (const [type, reference, simd] of [["MUL", mul, mulSimd], ["SUB", sub, subSimd]] as const) {
    for (const [aShape, bShape, taken] of cases) {
      const count = (s: number[]) => s.reduce((x, y) => x * y, 1);
      const outShape = aShape.map((d, i) =>
        Math.max(d, bShape[bShape.length - aShape.length + i] ?? 1)
      );
      if (bShape.length > aShape.length) outShape.splice(0, outShape.length, ...bShape);
      const a = operand("TENSOR_FLOAT32", aShape, randomFloats(count(aShape), 3));
      const b = operand("TENSOR_FLOAT32", bShape, randomFloats(count(bShape), 4));
      const inputs = [a, b, int32(0)];
      const outputInfo = operand("TENSOR_FLOAT32", outShape, null);
      const step = {
        inputs: inputs.map((t, i) => ({ ...t, value: i === 2 ? t.data : undefined })),
        outputs: [outputInfo],
      };
      strictEqual(simd.supports(step), taken, `${type} [${aShape}] by [${bShape}]`);
      if (!taken) continue;
      const kernel = simd.bind(step, [])!;
      const want = operand("TENSOR_FLOAT32", outShape, new Float32Array(count(outShape)));
      const got = operand("TENSOR_FLOAT32", outShape, new Float32Array(count(outShape)));
      reference.execute(inputs, [want]);
      kernel(inputs, [got]);
      const w = want.data as Float32Array, g = got.data as Float32Array;
      for (let i = 0; i < w.length; i++) {
        ok(Object.is(g[i], w[i]), `${type} [${aShape}] by [${bShape}] at ${i}: ${g[i]} vs ${w[i]}`);
      }
    }
  }
});

Deno.test("element-wise steps on cpu-simd with outputs under SIMD_MIN_ELEMENTS bind the reference kernel", () => {
  const small = [2, SIMD_MIN_ELEMENTS / 2 - 1];
  const large = [2, SIMD_MIN_ELEMENTS / 2];
  const step = (shape: number[]) => {
    const t = operand("TENSOR_FLOAT32", shape, null);
    return {
      inputs: [{ ...t, value: undefined }, { ...t, value: undefined }, {
        ...int32(0),
        value: new Int32Array([0]),
      }],
      outputs: [t],
    };
  };
  strictEqual(subSimd.bind(step(small), []), sub.execute);
  strictEqual(
    hardSwishStep.bind({ ...step(small), inputs: step(small).inputs.slice(0, 1) }, []),
    hardSwish.execute,
  );
  ok(subSimd.bind(step(large), []) !== sub.execute);
  ok(
    hardSwishStep.bind({ ...step(large), inputs: step(large).inputs.slice(0, 1) }, []) !==
      hardSwish.execute,
  );
  ok(subSimd.bind(step([2, -1]), []) !== sub.execute, "an open extent binds the SIMD kernel");
});

Deno.test("MINIMUM and MAXIMUM on cpu-simd equal the reference bit for bit in the SIMD forms", () => {
  const cases: [number[], number[]][] = [[[1, 40, 288], [1]], [[4, 5, 7], [7]], [[16, 8], [16, 8]]];
  const steps = [[minimum, minimumSimd], [maximum, maximumSimd]] as const;
  for (const [reference, simd] of steps) {
    for (const [aShape, bShape] of cases) {
      const count = (s: number[]) => s.reduce((x, y) => x * y, 1);
      const a = operand("TENSOR_FLOAT32", aShape, randomFloats(count(aShape), 11));
      const b = operand("TENSOR_FLOAT32", bShape, randomFloats(count(bShape), 12));
      const outputInfo = operand("TENSOR_FLOAT32", aShape, null);
      const step = {
        inputs: [a, b].map((t) => ({ ...t, value: undefined })),
        outputs: [outputInfo],
      };
      ok(simd.supports(step), `${reference.type} [${aShape}] by [${bShape}]`);
      const want = operand("TENSOR_FLOAT32", aShape, new Float32Array(count(aShape)));
      const got = operand("TENSOR_FLOAT32", aShape, new Float32Array(count(aShape)));
      reference.execute([a, b], [want]);
      simd.bind(step, [])!([a, b], [got]);
      const w = want.data as Float32Array, g = got.data as Float32Array;
      for (let i = 0; i < w.length; i++) ok(Object.is(g[i], w[i]), `${reference.type} at ${i}`);
    }
  }
});
