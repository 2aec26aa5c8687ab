/**
 * TRANSPOSE_CONV_2D on `cpu-simd`: float32 with a constant filter and bias on static shapes.
 * Every input pixel's products with every filter tap are one GEMM (the input's pixels as
 * rows, the taps x output channels as columns, weights packed once at preparation), run by
 * the manifest's SIMD GEMM kernel; the taps are then scattered onto the output pixels they
 * land on (added where strides make them overlap), the bias added and the activation
 * applied. Accumulation is in float32, as in the SIMD convolutions.
 */
import { packGemmWeights } from "../../../kernels/f32_packing.ts";
import { activationRangeFloat } from "../../../kernels/fixed_point.ts";
import type { TransposeConvGeometry } from "../../../kernels/conv_transpose.ts";
import { createF32FullyConnected } from "../../../kernels/manifest.ts";
import { isFullySpecified, sameShape } from "../../../nnapi/tensor.ts";
import { nhwcData, writeNhwc } from "../../../operations/common/layout.ts";
import { type Kernel, OperationError, ValueNotYetKnown } from "../../../operations/operation.ts";
import { plannedTransposeConv, transposeConv2d } from "../../../operations/transpose_conv_2d.ts";
import type { StepImplementation, StepOperands } from "../device.ts";

/** The call's plan, or undefined when a scalar is not constant or the call is invalid. */
function plan(step: StepOperands) {
  try {
    return plannedTransposeConv(step.inputs, step.outputs[0].shape);
  } catch (error) {
    if (error instanceof ValueNotYetKnown || error instanceof OperationError) return undefined;
    throw error;
  }
}

/**
 * Float32 with a constant filter and bias; where the shapes are known, a geometry the
 * operation accepts (else the kernel is bound per shape, and checks it then).
 */
function supports(step: StepOperands): boolean {
  const [input, filter, bias] = step.inputs;
  const shapesKnown = isFullySpecified(input.shape) && isFullySpecified(step.outputs[0].shape);
  return input.type === "TENSOR_FLOAT32" && filter.value instanceof Float32Array &&
    bias.value instanceof Float32Array && filter.shape.length === 4 &&
    (!shapesKnown || plan(step) !== undefined);
}

/** Columns of the GEMM: one per filter tap and output channel. */
function columns(g: Pick<TransposeConvGeometry, "filterHeight" | "filterWidth" | "outDepth">) {
  return g.filterHeight * g.filterWidth * g.outDepth;
}

/**
 * The filter [outDepth, filterHeight, filterWidth, inDepth] as GEMM weights whose rows run
 * over (tap row, tap column, output channel), packed with a zero bias.
 */
function pack(step: StepOperands) {
  const filter = step.inputs[1];
  if (!(filter.value instanceof Float32Array) || filter.shape.length !== 4) return undefined;
  const [outDepth, fh, fw, inDepth] = filter.shape;
  const g = { filterHeight: fh, filterWidth: fw, outDepth };
  const weights = new Float32Array(columns(g) * inDepth);
  for (let k = 0; k < outDepth; k++) {
    for (let t = 0; t < fh * fw; t++) {
      const from = (k * fh * fw + t) * inDepth;
      weights.set(filter.value.subarray(from, from + inDepth), (t * outDepth + k) * inDepth);
    }
  }
  const zeros = new Float32Array(columns(g));
  return [packGemmWeights(weights, zeros, { channels: columns(g), depth: inDepth })];
}

/** Adds each input pixel's taps onto the output pixels they land on (NHWC). */
function scatter(g: TransposeConvGeometry, taps: Float32Array, out: Float32Array): void {
  const { outHeight, outWidth, outDepth, filterHeight, filterWidth } = g;
  const width = columns(g);
  out.fill(0);
  let row = 0;
  for (let b = 0; b < g.batches; b++) {
    for (let y = 0; y < g.inHeight; y++) {
      for (let x = 0; x < g.inWidth; x++, row += width) {
        for (let i = 0; i < filterHeight; i++) {
          const oy = y * g.strideHeight - g.padTop + i;
          if (oy < 0 || oy >= outHeight) continue;
          for (let j = 0; j < filterWidth; j++) {
            const ox = x * g.strideWidth - g.padLeft + j;
            if (ox < 0 || ox >= outWidth) continue;
            const to = ((b * outHeight + oy) * outWidth + ox) * outDepth;
            const from = row + (i * filterWidth + j) * outDepth;
            for (let k = 0; k < outDepth; k++) out[to + k] += taps[from + k];
          }
        }
      }
    }
  }
}

/**
 * Whether the taps tile the output exactly (stride equal to the filter, no padding: an
 * upsampling head), so that each output element is one tap plus the bias.
 */
function tiles(g: TransposeConvGeometry): boolean {
  return g.strideHeight === g.filterHeight && g.strideWidth === g.filterWidth &&
    g.padTop === 0 && g.padLeft === 0 && g.outHeight === g.inHeight * g.filterHeight &&
    g.outWidth === g.inWidth * g.filterWidth;
}

/** The tiling case in one pass: each tap plus the bias, clamped, to its output pixel. */
function placeTiles(
  g: TransposeConvGeometry,
  taps: Float32Array,
  bias: Float32Array,
  min: number,
  max: number,
  out: Float32Array,
): void {
  const { outWidth, outDepth, filterHeight, filterWidth } = g;
  let from = 0;
  for (let b = 0; b < g.batches; b++) {
    for (let y = 0; y < g.inHeight; y++) {
      for (let x = 0; x < g.inWidth; x++) {
        for (let i = 0; i < filterHeight; i++) {
          const oy = y * filterHeight + i;
          for (let j = 0; j < filterWidth; j++, from += outDepth) {
            const to = ((b * g.outHeight + oy) * outWidth + x * filterWidth + j) * outDepth;
            for (let k = 0; k < outDepth; k++) {
              const v = taps[from + k] + bias[k];
              out[to + k] = v < min ? min : v > max ? max : v;
            }
          }
        }
      }
    }
  }
}

function bind(step: StepOperands, packed: readonly unknown[]): Kernel | undefined {
  const planned = plan(step);
  const weights = packed[0];
  const bias = step.inputs[2].value;
  if (!planned || !(weights instanceof Float32Array) || !(bias instanceof Float32Array)) {
    return undefined;
  }
  const { geometry: g, nchw } = planned;
  const { min, max } = activationRangeFloat(planned.activation);
  const rows = g.batches * g.inHeight * g.inWidth;
  if (rows === 0) return undefined; // an empty batch: the reference writes nothing
  const gemm = createF32FullyConnected(
    { rows, depth: g.inDepth, channels: columns(g) },
    weights,
    { activation: { min: -Infinity, max: Infinity } },
  );
  const taps = new Float32Array(rows * columns(g));
  const [inputShape, outputShape] = [step.inputs[0].shape, step.outputs[0].shape];
  return (inputs, outputs) => {
    const [input] = inputs;
    const output = outputs[0];
    if (
      !sameShape(input.shape, inputShape) || !sameShape(output.shape, outputShape) ||
      !(input.data instanceof Float32Array)
    ) {
      return transposeConv2d.execute(inputs, outputs);
    }
    gemm(nhwcData(input, nchw) as Float32Array, taps);
    writeNhwc(output, nchw, (data) => {
      const out = data as Float32Array;
      if (tiles(g)) return placeTiles(g, taps, bias, min, max, out);
      scatter(g, taps, out);
      for (let o = 0; o < out.length; o++) {
        const v = out[o] + bias[o % g.outDepth];
        out[o] = v < min ? min : v > max ? max : v;
      }
    });
  };
}

/** TRANSPOSE_CONV_2D on the SIMD CPU. */
export const transposeConv2dSimd: StepImplementation<"TRANSPOSE_CONV_2D"> = {
  type: "TRANSPOSE_CONV_2D",
  supports,
  pack,
  bind,
};
