/**
 * Spectral operators. NNAPI has no Fourier transform, so STFT and DFT are products with a
 * constant DFT matrix whose rows interleave the real and imaginary part of each bin (the
 * window and the inverse's 1/n folded in). The window functions and MelWeightMatrix fold to
 * constants (`spectral_constants.ts`).
 *
 * - STFT, batch and signal length known at conversion: GATHER frames the signal with a
 *   constant index tensor [frames, frame_length], FULLY_CONNECTED applies the matrix to
 *   every frame and RESHAPE gives [batch, frames, bins, 2].
 * - STFT, batch or length known only at execution: the framing is a strided convolution
 *   instead, one CONV_2D per part (real, imaginary) over the signal as an NHWC image [batch,
 *   1, length, components], joined by CONCATENATION and TRANSPOSE; no extent has to be known
 *   and the result keeps its rank (a RESHAPE after FULLY_CONNECTED's rows [batch * frames,
 *   ...] could not say which extent is the batch).
 * - DFT: TRANSPOSE brings the axis next to the real/imaginary one, FULLY_CONNECTED applies
 *   the matrix (a 1x1 CONV_2D when an extent known only at execution must stay apart from
 *   known ones), RESHAPE splits the bins from their parts and TRANSPOSE moves them back.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { hostTensorBudget } from "../limits.ts";
import { hostValues } from "../tensors.ts";
import { positive } from "./spectral_constants.ts";
import { reshapeTarget } from "./reshape.ts";
import { floatConstant, int32Vector, normalizeAxis, requireFloat, sameTypeAs } from "./common.ts";

const NHWC = false;

/** What one DFT matrix computes. */
interface DftMatrixSpec {
  /** The transform length n (dft_length, frame_length). */
  length: number;
  /** Input samples per transform: beyond `length` they are cut, below it zero-padded. */
  samples: number;
  /** 1: real input; 2: complex input, real and imaginary parts interleaved. */
  components: number;
  /** Output bins: n, or floor(n / 2) + 1 when onesided. */
  bins: number;
  /** The inverse transform: e^{+i...} and a factor 1/n. */
  inverse: boolean;
  /** A window multiplying the samples first (STFT). */
  window?: ArrayLike<number>;
}

/**
 * The DFT as a [2 * bins, samples * components] matrix: row 2k gives the real part of bin
 * k, row 2k + 1 its imaginary part, so a product with it is already interleaved as ONNX's
 * [..., bins, 2]. X[k] = sum_t w[t] x[t] e^{-+2 pi i k t / n} (ONNX's sign convention).
 */
function dftMatrix(spec: DftMatrixSpec): Float64Array {
  const { length: n, samples, components, bins, window } = spec;
  const columns = samples * components;
  const matrix = hostValues(2 * bins * columns);
  const sign = spec.inverse ? 1 : -1;
  const scale = spec.inverse ? 1 / n : 1;
  const used = Math.min(samples, n);
  for (let k = 0; k < bins; k++) {
    for (let t = 0; t < used; t++) {
      // The angle reduced modulo 2 pi exactly (k t mod n) keeps it accurate for long n.
      const angle = (2 * Math.PI * ((k * t) % n)) / n;
      const w = scale * (window ? window[t] : 1);
      // w e^{sign i angle} = c + i s; (xr + i xi)(c + i s) = xr c - xi s + i (xr s + xi c).
      const c = w * Math.cos(angle);
      const s = sign * w * Math.sin(angle);
      const re = 2 * k * columns + t * components;
      const im = re + columns;
      matrix[re] = c;
      matrix[im] = s;
      if (components === 2) {
        matrix[re + 1] = -s;
        matrix[im + 1] = c;
      }
    }
  }
  return matrix;
}

/**
 * The inverse of a real signal's one-sided spectrum (IRFFT) as an [n, bins * 2] matrix: the
 * bins X[0 .. floor(n / 2)] stand for the Hermitian X[n - k] = conj(X[k]), so x[t] = 1/n
 * sum_k m_k Re(X[k] e^{2 pi i k t / n}) with m_k = 2 for the bins that have a mirror image
 * and 1 for bin 0 (and bin n / 2 when n is even).
 */
function inverseRealMatrix(n: number, bins: number): Float64Array {
  const columns = bins * 2;
  const matrix = hostValues(n * columns);
  const lastMirrored = Math.ceil(n / 2) - 1;
  for (let t = 0; t < n; t++) {
    for (let k = 0; k < bins; k++) {
      const angle = (2 * Math.PI * ((k * t) % n)) / n;
      const weight = (k >= 1 && k <= lastMirrored ? 2 : 1) / n;
      matrix[t * columns + 2 * k] = weight * Math.cos(angle);
      matrix[t * columns + 2 * k + 1] = -weight * Math.sin(angle);
    }
  }
  return matrix;
}

/** The rows of a DFT matrix giving the real (part 0) or imaginary (part 1) parts. */
function partRows(matrix: Float64Array, bins: number, part: 0 | 1): Float64Array {
  const columns = matrix.length / (2 * bins);
  const rows = hostValues(bins * columns);
  for (let k = 0; k < bins; k++) {
    rows.set(matrix.subarray((2 * k + part) * columns, (2 * k + part + 1) * columns), k * columns);
  }
  return rows;
}

/** A constant scalar input (shape [] or [1]), or undefined when the input is omitted. */
function scalarInput(
  ctx: ConversionContext,
  node: NodeView,
  index: number,
  what: string,
): number | undefined {
  const name = node.input(index);
  if (name === undefined) return undefined;
  const tensor = ctx.requireConstant(name, what);
  if (tensor.data.length !== 1) {
    throw new Error(`${what} ('${name}') holds ${tensor.data.length} values, expected one`);
  }
  return tensor.data[0];
}

/** The bins of an n-point transform: all n, or the floor(n / 2) + 1 a real input determines. */
function binCount(n: number, onesided: boolean, components: number): number {
  if (onesided && components === 2) {
    throw new Error("onesided output is not defined for a complex input; set onesided to 0");
  }
  return onesided ? Math.floor(n / 2) + 1 : n;
}

/** The real/imaginary extent of a signal, checked. */
function componentsOf(extent: number): 1 | 2 {
  if (extent !== 1 && extent !== 2) {
    throw new Error(
      `the last extent is ${
        extent === 0 ? "known only at execution" : extent
      }; expected 1 (real) or 2 (real, imaginary)`,
    );
  }
  return extent;
}

/** FULLY_CONNECTED of `rows` with a DFT matrix [units, inputs] and no bias. */
function applyMatrix(
  ctx: ConversionContext,
  rows: BuiltOperand,
  matrix: Float64Array,
  units: number,
  spec: OutputSpec,
): BuiltOperand {
  return ctx.emit("FULLY_CONNECTED", [
    rows,
    floatConstant(ctx, spec, [units, matrix.length / units], matrix),
    floatConstant(ctx, spec, [units], new Float64Array(units)),
    ctx.builder.int32(FUSED_NONE),
  ], [spec])[0];
}

/**
 * The product of `input` [lead..., n, c] (lead[0] known only at execution) with a DFT matrix
 * as a 1x1 CONV_2D over the NHWC image [lead[0], product of the other lead, 1, n * c]:
 * FULLY_CONNECTED's rows would merge the unknown extent with known ones, after which no
 * RESHAPE could tell them apart when the shapes are inferred. Gives [lead[0], ..., 1, units].
 */
function applyMatrixPerBatch(
  ctx: ConversionContext,
  input: BuiltOperand,
  lead: readonly number[],
  matrix: Float64Array,
  units: number,
  spec: OutputSpec,
): BuiltOperand {
  const s = ctx.builder;
  const columns = matrix.length / units;
  const rest = lead.slice(1).reduce((a, b) => a * b, 1);
  const [image] = ctx.emit("RESHAPE", [input, reshapeVector(ctx, [0, rest, 1, columns])], [spec]);
  return ctx.emit("CONV_2D", [
    image,
    floatConstant(ctx, spec, [units, 1, 1, columns], matrix),
    floatConstant(ctx, spec, [units], new Float64Array(units)),
    s.int32(0),
    s.int32(0),
    s.int32(0),
    s.int32(0),
    s.int32(1),
    s.int32(1),
    s.int32(FUSED_NONE),
    s.bool(NHWC),
  ], [spec])[0];
}

/** An STFT's frames and their transform, checked. */
interface StftPlan {
  signal: string;
  dims: readonly number[];
  components: 1 | 2;
  step: number;
  frameLength: number;
  bins: number;
  matrix: Float64Array;
}

function stftPlan(node: NodeView, ctx: ConversionContext): StftPlan {
  const signal = node.inputs[0];
  requireFloat(ctx, signal);
  const dims = ctx.dims(signal);
  if (dims.length !== 2 && dims.length !== 3) {
    throw new Error(`the signal has rank ${dims.length}; STFT takes [batch, length, 1 or 2]`);
  }
  const components = dims.length === 3 ? componentsOf(dims[2]) : 1;
  const stepValue = scalarInput(ctx, node, 1, "STFT's frame_step");
  if (stepValue === undefined) throw new Error("frame_step (input 1) is required");
  const step = positive(stepValue, "frame_step");
  const windowName = node.input(2);
  const window = windowName === undefined ? undefined : ctx.constant(windowName);
  if (windowName !== undefined && !window) {
    throw new Error(
      `the window ('${windowName}') must be a constant (HannWindow, HammingWindow and ` +
        "BlackmanWindow of a constant size fold to one)",
    );
  }
  if (window && window.dims.length !== 1) {
    throw new Error(`the window has shape [${window.dims}], expected one axis`);
  }
  const given = scalarInput(ctx, node, 3, "STFT's frame_length");
  if (given === undefined && !window) {
    throw new Error("the frame length is unknown: give a window or a frame_length");
  }
  const frameLength = positive(given ?? window!.dims[0], "the frame length");
  if (window && window.dims[0] !== frameLength) {
    throw new Error(
      `the window has ${window.dims[0]} values but frame_length is ${frameLength}; they must agree`,
    );
  }
  const bins = binCount(frameLength, node.int("onesided", 1) === 1, components);
  const matrix = dftMatrix({
    length: frameLength,
    samples: frameLength,
    components,
    bins,
    inverse: false,
    window: window?.data,
  });
  return { signal, dims, components, step, frameLength, bins, matrix };
}

/** Frames by GATHER with constant indices, one FULLY_CONNECTED, RESHAPE. */
function stftByGather(node: NodeView, ctx: ConversionContext, plan: StftPlan): void {
  const { signal, dims, step, frameLength: n, bins } = plan;
  const length = dims[1];
  if (length < n) {
    throw new Error(`the signal has ${length} samples, fewer than one frame (${n})`);
  }
  const frames = Math.floor((length - n) / step) + 1;
  hostTensorBudget().reserve([frames, n], Int32Array.BYTES_PER_ELEMENT, true);
  const indices = new Int32Array(frames * n);
  for (let f = 0; f < frames; f++) {
    for (let t = 0; t < n; t++) indices[f * n + t] = f * step + t;
  }
  const s = ctx.builder;
  const spec = sameTypeAs(ctx, signal);
  // [batch, length(, components)] -> [batch, frames, n(, components)].
  const [framed] = ctx.emit("GATHER", [
    ctx.operand(signal),
    s.int32(1),
    s.constant("TENSOR_INT32", [frames, n], indices),
  ], [spec]);
  const spectra = applyMatrix(ctx, framed, plan.matrix, 2 * bins, spec);
  ctx.emitAs(
    node.outputs[0],
    "RESHAPE",
    [spectra, reshapeVector(ctx, [dims[0], frames, bins, 2])],
    spec,
  );
}

/**
 * Frames by convolution: the signal as an NHWC image [batch, 1, length, components], one
 * CONV_2D per part with filters [bins, 1, n, components] and stride frame_step gives [batch,
 * 1, frames, bins]; CONCATENATION on the height and TRANSPOSE make [batch, frames, bins, 2].
 */
function stftByConvolution(node: NodeView, ctx: ConversionContext, plan: StftPlan): void {
  const { signal, dims, components, frameLength: n, bins } = plan;
  const s = ctx.builder;
  const spec = sameTypeAs(ctx, signal);
  let image = ctx.operand(signal);
  if (dims.length === 2) [image] = ctx.emit("EXPAND_DIMS", [image, s.int32(2)], [spec]);
  [image] = ctx.emit("EXPAND_DIMS", [image, s.int32(1)], [spec]);
  const zeros = floatConstant(ctx, spec, [bins], new Float64Array(bins));
  const parts = ([0, 1] as const).map((part) =>
    ctx.emit("CONV_2D", [
      image,
      floatConstant(ctx, spec, [bins, 1, n, components], partRows(plan.matrix, bins, part)),
      zeros,
      s.int32(0),
      s.int32(0),
      s.int32(0),
      s.int32(0),
      s.int32(plan.step),
      s.int32(1),
      s.int32(FUSED_NONE),
      s.bool(NHWC),
    ], [spec])[0]
  );
  const [joined] = ctx.emit("CONCATENATION", [...parts, s.int32(1)], [spec]);
  const perm = s.constant("TENSOR_INT32", [4], new Int32Array([0, 2, 3, 1]));
  ctx.emitAs(node.outputs[0], "TRANSPOSE", [joined, perm], spec);
}

/** STFT (opset 17): signal, frame_step, window?, frame_length?; onesided (default 1). */
const stft: Rule = {
  convert(node, ctx) {
    const plan = stftPlan(node, ctx);
    if (plan.dims[0] === 0 || plan.dims[1] === 0) stftByConvolution(node, ctx, plan);
    else stftByGather(node, ctx, plan);
  },
};

/**
 * DFT: opset 17 takes the axis as an attribute (default 1), opset 20 as input 2 (default
 * -2); dft_length (input 1) cuts or zero-pads the axis; inverse and onesided attributes,
 * both set meaning the IRFFT of a one-sided spectrum (a real output [..., n, 1], n =
 * dft_length or 2 * (bins - 1)), as ONNX's shape inference and onnxruntime have it.
 */
const dft: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const dims = ctx.dims(x);
    const rank = dims.length;
    if (rank < 3) {
      throw new Error(
        `the input has rank ${rank}; DFT takes [batch, n1, ..., 1 or 2] (rank 3 or more)`,
      );
    }
    const components = componentsOf(dims[rank - 1]);
    const axisValue = ctx.opset >= 20
      ? scalarInput(ctx, node, 2, "DFT's axis") ?? -2
      : node.int("axis", 1);
    const axis = normalizeAxis(axisValue, rank);
    if (axis === rank - 1) {
      throw new Error(`axis ${axisValue} is the real/imaginary axis, not a signal axis`);
    }
    const samples = dims[axis];
    if (samples === 0) {
      throw new Error(`the transformed axis ${axis} has an extent known only at execution`);
    }
    const given = scalarInput(ctx, node, 1, "DFT's dft_length");
    const onesided = node.int("onesided", 0) === 1;
    const inverse = node.int("inverse", 0) === 1;
    let matrix: Float64Array;
    // The output's extent on the axis and per value (2: real, imaginary; 1: real).
    let extent: number;
    let parts: number;
    if (inverse && onesided) {
      if (components !== 2) {
        throw new Error("an inverse onesided DFT (IRFFT) takes a complex input ([..., 2])");
      }
      extent = positive(given ?? 2 * (samples - 1), "dft_length");
      if (samples !== Math.floor(extent / 2) + 1) {
        // onnxruntime gives no consistent meaning to a spectrum of another length.
        throw new Error(
          `an IRFFT of length ${extent} takes ${Math.floor(extent / 2) + 1} bins; ` +
            `the input has ${samples}`,
        );
      }
      parts = 1;
      matrix = inverseRealMatrix(extent, samples);
    } else {
      const length = positive(given ?? samples, "dft_length");
      extent = binCount(length, onesided, components);
      parts = 2;
      matrix = dftMatrix({ length, samples, components, bins: extent, inverse });
    }

    const spec = sameTypeAs(ctx, x);
    // [..., n, ..., c] -> [lead..., n, c], an extent known only at execution leading.
    const others = dims.map((_, i) => i).filter((i) => i !== axis && i !== rank - 1);
    const unknown = others.filter((i) => dims[i] === 0);
    if (unknown.length > 1) {
      throw new Error(`the input [${dims}] has several extents known only at execution`);
    }
    const lead = [...unknown, ...others.filter((i) => dims[i] !== 0)];
    const leadDims = lead.map((i) => dims[i]);
    const perm = [...lead, axis, rank - 1];
    const moved = perm.every((p, i) => p === i);
    const rows = moved
      ? ctx.operand(x)
      : ctx.emit("TRANSPOSE", [ctx.operand(x), vector(ctx, perm)], [spec])[0];
    const units = extent * parts;
    const spectra = unknown.length > 0 && lead.length > 1
      ? applyMatrixPerBatch(ctx, rows, leadDims, matrix, units, spec)
      : applyMatrix(ctx, rows, matrix, units, spec);
    const target = reshapeVector(ctx, [...leadDims, extent, parts]);
    if (moved) {
      ctx.emitAs(node.outputs[0], "RESHAPE", [spectra, target], spec);
      return;
    }
    const [split] = ctx.emit("RESHAPE", [spectra, target], [spec]);
    const back = new Array<number>(rank);
    perm.forEach((p, i) => back[p] = i);
    ctx.emitAs(node.outputs[0], "TRANSPOSE", [split, vector(ctx, back)], spec);
  },
};

function vector(ctx: ConversionContext, values: readonly number[]): BuiltOperand {
  return ctx.builder.constant("TENSOR_INT32", [values.length], new Int32Array(values));
}

export const SPECTRAL_RULES: Record<string, Rule> = {
  STFT: stft,
  DFT: dft,
};

/** A RESHAPE shape operand for `dims` (0 = known only at execution, at most one). */
function reshapeVector(ctx: ConversionContext, dims: readonly number[]): BuiltOperand {
  return int32Vector(ctx, reshapeTarget(dims));
}
