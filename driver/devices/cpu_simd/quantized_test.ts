/**
 * The quant8 SIMD forms of CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED give the reference
 * kernels' bytes exactly: uint8 and int8 operands, asymmetric and per-channel filters, odd
 * depths, channel counts that are not whole blocks, output widths across the 4-pixel tile,
 * padding, strides, dilation, depth multipliers, NCHW, every fused activation, multipliers
 * below and above one, and calls split across compute lanes. The packed weights unpack to
 * the raw ones, and shapes the kernel was not planned for go to the reference.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { ChannelQuant, Tensor, TensorData } from "../../../nnapi/tensor.ts";
import type { OperandType } from "../../../nnapi/types.ts";
import {
  lanesReady,
  privateThreadBudget,
  setThreadBudget,
  splitCallCount,
} from "../../../kernels/compute_lanes.ts";
import { seededFloats } from "../../../kernels/seeded_random.ts";
import { conv2d } from "../../../operations/conv_2d.ts";
import { depthwiseConv2d } from "../../../operations/depthwise_conv_2d.ts";
import { fullyConnected } from "../../../operations/fully_connected.ts";
import type { Kernel, OperationDefinition, PrepareInput } from "../../../operations/operation.ts";
import type { StepImplementation } from "../device.ts";
import { conv2dQuant8, depthwiseConv2dQuant8, fullyConnectedQuant8 } from "./quantized.ts";

type Quant8Type = "TENSOR_QUANT8_ASYMM" | "TENSOR_QUANT8_ASYMM_SIGNED";

/** Seeded 8-bit values over the whole range of `type`. */
function bytes(type: OperandType, n: number, seed: number): Uint8Array | Int8Array {
  const floats = seededFloats(n, seed, 256);
  return type === "TENSOR_QUANT8_ASYMM"
    ? Uint8Array.from(floats, (v) => Math.floor(v) + 128)
    : Int8Array.from(floats, (v) => Math.floor(v));
}

function tensor(
  type: OperandType,
  shape: number[],
  data: TensorData | null,
  quant: { scale?: number; zeroPoint?: number; channelQuant?: ChannelQuant } = {},
): Tensor {
  const { scale = 0, zeroPoint = 0, channelQuant } = quant;
  return { type, shape, scale, zeroPoint, data, ...(channelQuant ? { channelQuant } : {}) };
}

const int32 = (v: number) => tensor("INT32", [], Int32Array.of(v));
const bool = (v: boolean) => tensor("BOOL", [], Uint8Array.of(v ? 1 : 0));

/** A filter of `type` (per-channel along `channelDim` for the symmetric int8 type). */
function filterOf(
  type: OperandType,
  shape: number[],
  seed: number,
  channelDim: number,
  range = 254,
): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  if (type === "TENSOR_QUANT8_SYMM_PER_CHANNEL") {
    const scales = Array.from({ length: shape[channelDim] }, (_, c) => 0.004 + 0.001 * (c % 5));
    const data = Int8Array.from(seededFloats(n, seed, range), (v) => Math.round(v));
    return tensor(type, shape, data, { channelQuant: { channelDim, scales } });
  }
  const zeroPoint = type === "TENSOR_QUANT8_ASYMM" ? 131 : -7;
  return tensor(type, shape, bytes(type, n, seed), { scale: 0.006, zeroPoint });
}

/** An int32 bias for `channels` outputs (scale 0 for per-channel filters, as NNAPI has it). */
function biasOf(
  channels: number,
  input: Tensor,
  filter: Tensor,
  seed: number,
  range = 8000,
): Tensor {
  const data = Int32Array.from(seededFloats(channels, seed, range), (v) => Math.round(v));
  const scale = filter.channelQuant ? 0 : Math.fround(input.scale * filter.scale);
  return tensor("TENSOR_INT32", [channels], data, { scale });
}

/** What `pack`/`bind` see: constants (all but input 0) carry their value. */
function planned(inputs: Tensor[]): PrepareInput[] {
  return inputs.map((t, i) => ({ ...t, value: i === 0 ? undefined : t.data }));
}

function emptyLike(type: OperandType, length: number): TensorData {
  return type === "TENSOR_QUANT8_ASYMM" ? new Uint8Array(length) : new Int8Array(length);
}

/**
 * Packs (checking that the weights unpack to the raw ones), binds and runs the quant8 kernel
 * and the reference on the same tensors; returns the bound kernel.
 */
function compare(
  definition: OperationDefinition,
  implementation: StepImplementation,
  inputs: Tensor[],
  output: { shape: number[]; scale: number; zeroPoint: number },
): Kernel {
  const type = inputs[0].type;
  const outputInfo = tensor(type, output.shape, null, output);
  const [inferred] = definition.prepare(planned(inputs), [outputInfo]);
  strictEqual(inferred.join(), output.shape.join(), `${definition.type} output shape`);
  const step = { inputs: planned(inputs), outputs: [outputInfo] };
  ok(implementation.supports(step), `cpu-simd supports this quant8 ${definition.type}`);
  const packed = implementation.pack!(step);
  ok(packed && packed.length === 1, `${definition.type} packs its weights`);
  const [filter, bias] = implementation.unpack!(inputs, packed);
  deepStrictEqual(filter, inputs[1].data, `${definition.type} filter unpacks to its values`);
  deepStrictEqual(bias, inputs[2].data, `${definition.type} bias unpacks to its values`);
  const kernel = implementation.bind(step, packed);
  ok(kernel, `${definition.type} binds a quant8 kernel`);
  const length = output.shape.reduce((a, b) => a * b, 1);
  const want = tensor(type, output.shape, emptyLike(type, length), output);
  const got = tensor(type, output.shape, emptyLike(type, length).fill(0x5a), output);
  definition.execute(inputs, [want]);
  kernel(inputs, [got]);
  deepStrictEqual(got.data, want.data, `${definition.type} [${output.shape}] equals the reference`);
  const saturated = [...want.data!].filter((v) => v === -128 || v === 0 || v === 127 || v === 255);
  ok(saturated.length < length / 2, `${definition.type}: most outputs are inside the range`);
  return kernel;
}

/**
 * An input of `type` with a zero point inside its range; `narrow` keeps values within 2 of
 * the zero point (small sums, for multipliers above one that do not saturate).
 */
function inputOf(type: Quant8Type, shape: number[], seed: number, narrow = false): Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const zeroPoint = type === "TENSOR_QUANT8_ASYMM" ? 3 : -100;
  const data = narrow
    ? Int32Array.from(seededFloats(n, seed, 5), (v) => zeroPoint + Math.round(v))
    : bytes(type, n, seed);
  const typed = type === "TENSOR_QUANT8_ASYMM" ? Uint8Array.from(data) : Int8Array.from(data);
  return tensor(type, shape, typed, { scale: 0.5, zeroPoint });
}

/** The output's quantization: a multiplier below one, or (scale 0.001) above it; scale 4 keeps most sums of
 * full-range values inside the output range. */
function outputOf(type: Quant8Type, shape: number[], large = false) {
  return {
    shape,
    scale: large ? 0.001 : 4,
    zeroPoint: type === "TENSOR_QUANT8_ASYMM" ? 120 : 9,
  };
}

const FORMS: [Quant8Type, OperandType][] = [
  ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM"],
  ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_SYMM_PER_CHANNEL"],
  ["TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_ASYMM_SIGNED"],
  ["TENSOR_QUANT8_ASYMM_SIGNED", "TENSOR_QUANT8_SYMM_PER_CHANNEL"],
];

Deno.test("quant8 conv2d equals the reference byte for byte: both signs, per-channel, padding, strides, dilation, NCHW, tiles", () => {
  for (const [type, filterType] of FORMS) {
    // 9 outputs (a block and one channel), depth 5 (odd: a padded int16 pair).
    const filter = filterOf(filterType, [9, 3, 3, 5], 1, 0);
    for (const activation of [0, 1, 2, 3]) {
      // Implicit SAME, stride 2: [2, 7, 6, 5] -> [2, 4, 3, 9].
      const input = inputOf(type, [2, 7, 6, 5], 2 + activation);
      compare(conv2d, conv2dQuant8, [
        input,
        filter,
        biasOf(9, input, filter, 3),
        ...[1, 2, 2, activation].map(int32),
      ], outputOf(type, [2, 4, 3, 9]));
    }
    // Output widths 1 to 9 (tiles of 4 pixels and the single-pixel tail), stride 1 SAME.
    for (let width = 1; width <= 9; width++) {
      const input = inputOf(type, [1, 3, width, 5], 10 + width);
      compare(conv2d, conv2dQuant8, [
        input,
        filter,
        biasOf(9, input, filter, 4),
        ...[1, 1, 1, 0].map(int32),
      ], outputOf(type, [1, 3, width, 9]));
    }
    // Explicit padding (left 1, right 0, top 2, bottom 1), NCHW, dilation 2.
    const nchw = inputOf(type, [1, 5, 8, 9], 20);
    const wide = filterOf(filterType, [17, 3, 3, 5], 21, 0);
    compare(conv2d, conv2dQuant8, [
      nchw,
      wide,
      biasOf(17, nchw, wide, 22),
      ...[1, 0, 2, 1, 1, 1, 1].map(int32),
      bool(true),
      int32(2),
      int32(2),
    ], outputOf(type, [1, 17, 7, 6]));
    // 1x1, 16 channels.
    const pointwise = filterOf(filterType, [16, 1, 1, 6], 23, 0);
    const pixels = inputOf(type, [1, 4, 5, 6], 24);
    compare(conv2d, conv2dQuant8, [
      pixels,
      pointwise,
      biasOf(16, pixels, pointwise, 25),
      ...[2, 1, 1, 3].map(int32),
    ], outputOf(type, [1, 4, 5, 16]));
  }
});

Deno.test("quant8 depthwiseConv2d equals the reference byte for byte: multipliers, padding, strides, NCHW", () => {
  for (const [type, filterType] of FORMS) {
    const filter = filterOf(filterType, [1, 3, 3, 12], 30, 3);
    for (const activation of [0, 1, 2, 3]) {
      // Implicit SAME, stride 1, depth multiplier 3: [1, 5, 6, 4] -> [1, 5, 6, 12].
      const input = inputOf(type, [1, 5, 6, 4], 31 + activation);
      compare(depthwiseConv2d, depthwiseConv2dQuant8, [
        input,
        filter,
        biasOf(12, input, filter, 32),
        ...[1, 1, 1, 3, activation].map(int32),
      ], outputOf(type, [1, 5, 6, 12]));
    }
    // NCHW, explicit padding, stride 2, multiplier 1, two batches.
    const nchw = inputOf(type, [2, 12, 7, 7], 40);
    compare(depthwiseConv2d, depthwiseConv2dQuant8, [
      nchw,
      filter,
      biasOf(12, nchw, filter, 41),
      ...[1, 1, 1, 1, 2, 2, 1, 1].map(int32),
      bool(true),
    ], outputOf(type, [2, 12, 4, 4]));
  }
});

Deno.test("quant8 fullyConnected equals the reference byte for byte: few rows (channel bands), many rows, odd depth", () => {
  for (const [type] of FORMS) {
    const weights = filterOf(type, [13, 21], 50, 0);
    for (const [rows, activation] of [[1, 0], [3, 1], [9, 2], [17, 3]]) {
      const input = inputOf(type, [rows, 21], 51 + rows);
      compare(fullyConnected, fullyConnectedQuant8, [
        input,
        weights,
        biasOf(13, input, weights, 52),
        int32(activation),
      ], outputOf(type, [rows, 13]));
    }
  }
});

Deno.test("quant8 kernels with multipliers above one (left shifts) equal the reference", () => {
  for (const type of ["TENSOR_QUANT8_ASYMM", "TENSOR_QUANT8_ASYMM_SIGNED"] as const) {
    const perChannel = "TENSOR_QUANT8_SYMM_PER_CHANNEL";
    const filter = filterOf(perChannel, [9, 3, 3, 5], 80, 0, 7);
    const input = inputOf(type, [1, 6, 5, 5], 81, true);
    const bias = biasOf(9, input, filter, 82, 40);
    const kernel = compare(conv2d, conv2dQuant8, [
      input,
      filter,
      bias,
      ...[1, 1, 1, 0].map(int32),
    ], outputOf(type, [1, 6, 5, 9], true));
    ok(kernel);
    const dwFilter = filterOf(perChannel, [1, 3, 3, 10], 83, 3, 7);
    const dwInput = inputOf(type, [1, 5, 6, 5], 84, true);
    compare(depthwiseConv2d, depthwiseConv2dQuant8, [
      dwInput,
      dwFilter,
      biasOf(10, dwInput, dwFilter, 85, 40),
      ...[1, 1, 1, 2, 0].map(int32),
    ], outputOf(type, [1, 5, 6, 10], true));
  }
});

Deno.test("a quant8 kernel hands shapes it was not planned for to the reference", () => {
  const type = "TENSOR_QUANT8_ASYMM";
  const filter = filterOf(type, [4, 3, 3, 3], 60, 0);
  const input = inputOf(type, [1, 6, 6, 3], 61);
  const inputs = [input, filter, biasOf(4, input, filter, 62), ...[1, 1, 1, 0].map(int32)];
  const kernel = compare(conv2d, conv2dQuant8, inputs, outputOf(type, [1, 6, 6, 4]));
  const other = inputOf(type, [1, 5, 7, 3], 63);
  const otherInputs = [other, ...inputs.slice(1)];
  const out = outputOf(type, [1, 5, 7, 4]);
  const want = tensor(type, out.shape, new Uint8Array(140), out);
  const got = tensor(type, out.shape, new Uint8Array(140), out);
  conv2d.execute(otherInputs, [want]);
  kernel(otherInputs, [got]);
  deepStrictEqual(got.data, want.data);
});

Deno.test("quant8 kernels split across compute lanes give the bytes of the reference", async () => {
  const type = "TENSOR_QUANT8_ASYMM";
  const filter = filterOf(type, [40, 3, 3, 24], 70, 0);
  const input = inputOf(type, [1, 29, 29, 24], 71);
  const convInputs = [input, filter, biasOf(40, input, filter, 72), ...[1, 1, 1, 3].map(int32)];
  const dwFilter = filterOf(type, [1, 3, 3, 96], 73, 3);
  const dwInput = inputOf(type, [1, 57, 57, 96], 74);
  const dwInputs = [
    dwInput,
    dwFilter,
    biasOf(96, dwInput, dwFilter, 75),
    ...[1, 1, 1, 1, 0].map(int32),
  ];
  const fcWeights = filterOf(type, [1000, 1280], 76, 0);
  const fcInput = inputOf(type, [1, 1280], 77);
  const fcInputs = [fcInput, fcWeights, biasOf(1000, fcInput, fcWeights, 78), int32(0)];
  const budget = privateThreadBudget(3);
  setThreadBudget(budget);
  try {
    const cases = [
      () => compare(conv2d, conv2dQuant8, convInputs, outputOf(type, [1, 29, 29, 40])),
      () =>
        compare(depthwiseConv2d, depthwiseConv2dQuant8, dwInputs, outputOf(type, [1, 57, 57, 96])),
      () =>
        compare(fullyConnected, fullyConnectedQuant8, fcInputs, {
          ...outputOf(type, [1, 1000]),
          scale: 40,
        }),
    ];
    // Lanes start on the first split attempt; run once so they exist, then wait for them.
    cases[0]();
    const ready = await lanesReady(2, 20_000);
    ok(ready >= 2, `${ready} of 2 lanes ready`);
    for (const [k, run] of cases.entries()) {
      const before = splitCallCount();
      run();
      ok(splitCallCount() > before, `case ${k}: the call was split`);
      strictEqual(budget.counters[0], 2, `case ${k}: free threads restored`);
    }
  } finally {
    setThreadBudget(undefined);
  }
});
