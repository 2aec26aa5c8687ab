/**
 * NNAPI's layers as ONNX: CONV_2D and DEPTHWISE_CONV_2D (a grouped Conv; NHWC tensors
 * transposed to ONNX's NCHW around it, the filter re-laid out at export; implicit padding
 * resolved with NNAPI's own rule against the execution's shapes), AVERAGE_POOL_2D (padding
 * not counted, as NNAPI averages) and MAX_POOL_2D, FULLY_CONNECTED (Gemm over the input's
 * rows), DYNAMIC_QUANTIZE_FULLY_CONNECTED (onnxruntime's DynamicQuantizeMatMul), SOFTMAX
 * (beta a Mul before it). Each fused activation follows its node.
 */
import type { SubgraphStep } from "../../../driver/devices/device.ts";
import type { TensorInfo } from "../../../nnapi/tensor.ts";
import type { OperationType } from "../../../nnapi/types.ts";
import type { Padding2d } from "../../../operations/common/padding.ts";
import { convolutionParams, type ConvolutionType } from "../../../operations/common/convolution.ts";
import { poolParams } from "../../../operations/common/pooling.ts";
import { transposeConvolutionParams } from "../../../operations/transpose_conv_2d.ts";
import type { ExportContext, ExportRule } from "../export.ts";
import { float32Only } from "./elementwise.ts";

const TO_NCHW = [0, 3, 1, 2];
const TO_NHWC = [0, 2, 3, 1];

function infos(step: SubgraphStep, ctx: ExportContext): TensorInfo[] {
  return step.inputs.map((i) => {
    const o = ctx.operands[i];
    return { type: o.type, shape: o.shape, scale: o.scale, zeroPoint: o.zeroPoint };
  });
}

/**
 * `body(input, output)` on NCHW tensors for a step whose tensors are NHWC (transposed in and
 * out) or NCHW already; the fused activation after it, before the transpose back (it is per
 * element, so the order does not matter to the values): onnxruntime then fuses it into the
 * Conv, and cancels the transpose against the next step's, where one follows.
 */
function inNchw(
  ctx: ExportContext,
  step: SubgraphStep,
  options: { nchw: boolean; activation: number; label: string },
  body: (input: string, output: string) => void,
): void {
  const out = ctx.name(step.outputs[0]);
  let input = ctx.input(step, 0);
  if (!options.nchw) {
    const moved = ctx.temporary(`${options.label}_in`);
    ctx.node("Transpose", [input], [moved], { perm: TO_NCHW });
    input = moved;
  }
  const result = ctx.temporary(options.label);
  body(input, result);
  if (options.nchw) return ctx.activate(result, options.activation, out);
  const activated = ctx.temporary(`${options.label}_out`);
  ctx.activate(result, options.activation, activated);
  ctx.node("Transpose", [activated], [out], { perm: TO_NHWC });
}

/** ONNX's window attributes (kernel, pads, strides) of NNAPI's resolved padding and strides. */
function windowAttributes(
  p: { padding: Padding2d; strideHeight: number; strideWidth: number },
  kernel: [number, number],
) {
  const { top, left, bottom, right } = p.padding;
  return {
    kernel_shape: kernel,
    pads: [top, left, bottom, right],
    strides: [p.strideHeight, p.strideWidth],
  };
}

function convolution(type: ConvolutionType): ExportRule {
  return {
    supports: (step, ctx) =>
      float32Only(step, ctx) && ctx.isConstant(step, 1) &&
      step.inputs.slice(3).every((_, j) => ctx.isConstant(step, j + 3)),
    write(step, ctx) {
      const p = convolutionParams(infos(step, ctx), (j) => ctx.scalar(step, j), type);
      const filter = ctx.operands[step.inputs[1]];
      const [o, kh, kw, i] = filter.shape; // OHWI; depthwise: [1, H, W, C * multiplier]
      const values = filter.value as Float32Array;
      const depthwise = type === "DEPTHWISE_CONV_2D";
      const outChannels = depthwise ? i : o;
      const perOutput = depthwise ? 1 : i;
      // ONNX's [O, I/group, H, W].
      const dims = [outChannels, perOutput, kh, kw];
      const w = ctx.madeFrom("filter", dims, values, `${type} OIHW`, () => {
        const weights = new Float32Array(outChannels * perOutput * kh * kw);
        for (let out = 0; out < outChannels; out++) {
          for (let c = 0; c < perOutput; c++) {
            for (let y = 0; y < kh; y++) {
              for (let x = 0; x < kw; x++) {
                const from = depthwise ? (y * kw + x) * i + out : ((out * kh + y) * kw + x) * i + c;
                weights[((out * perOutput + c) * kh + y) * kw + x] = values[from];
              }
            }
          }
        }
        return weights;
      });
      const inputChannels = ctx.operands[step.inputs[0]].shape[p.nchw ? 1 : 3];
      inNchw(
        ctx,
        step,
        { nchw: p.nchw, activation: p.activation, label: "conv" },
        (x, y) =>
          ctx.node("Conv", [x, w, ctx.input(step, 2)], [y], {
            ...windowAttributes(p, [kh, kw]),
            dilations: [p.dilationHeight, p.dilationWidth],
            group: depthwise ? inputChannels : 1,
          }),
      );
    },
  };
}

function pool(op: "AveragePool" | "MaxPool"): ExportRule {
  return {
    supports: (step, ctx) =>
      float32Only(step, ctx) && step.inputs.slice(1).every((_, j) => ctx.isConstant(step, j + 1)),
    write(step, ctx) {
      const shape = ctx.operands[step.inputs[0]].shape;
      const p = poolParams(step.inputs.length, (j) => ctx.scalar(step, j), shape);
      inNchw(
        ctx,
        step,
        { nchw: p.nchw, activation: p.activation, label: op },
        (x, y) =>
          ctx.node(op, [x], [y], {
            ...windowAttributes(p, [p.filterHeight, p.filterWidth]),
            ...(op === "AveragePool" ? { count_include_pad: 0 } : {}),
          }),
      );
    },
  };
}

/**
 * A dense layer's input as rows of `depth` ([batches, depth], as NNAPI flattens it): the
 * input itself when it has that shape already.
 */
function rowsOf(step: SubgraphStep, ctx: ExportContext, depth: number): string {
  const input = ctx.input(step, 0);
  const shape = ctx.operands[step.inputs[0]].shape;
  if (shape.length === 2 && shape[1] === depth) return input;
  const rows = ctx.temporary("rows");
  ctx.node("Reshape", [input, ctx.constant("rows", [2], [-1, depth], "int64")], [rows]);
  return rows;
}

const fullyConnected: ExportRule = {
  supports: (step, ctx) => float32Only(step, ctx) && ctx.isConstant(step, 3),
  write(step, ctx) {
    const weights = ctx.operands[step.inputs[1]].shape;
    const result = ctx.temporary("fc");
    const rows = rowsOf(step, ctx, weights[1]);
    ctx.node("Gemm", [rows, ctx.input(step, 1), ctx.input(step, 2)], [result], { transB: 1 });
    ctx.activate(result, ctx.scalar(step, 3), ctx.name(step.outputs[0]));
  },
};

/**
 * DYNAMIC_QUANTIZE_FULLY_CONNECTED: onnxruntime's DynamicQuantizeMatMul (com.microsoft; what
 * its optimizer makes of DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul) over the
 * input's rows, the weights re-laid out as uint8 [inputSize, units]; the bias (unless all
 * zeros) added after it, then the fused activation. Unsigned weights only: onnxruntime's
 * kernels for signed ones may saturate 16-bit pair sums on CPUs without VNNI.
 */
const dynamicQuantizeFullyConnected: ExportRule = {
  supports: (step, ctx) =>
    ctx.operands[step.inputs[0]].type === "TENSOR_FLOAT32" &&
    ctx.operands[step.inputs[1]].type === "TENSOR_QUANT8_ASYMM" && ctx.isConstant(step, 1) &&
    ctx.isConstant(step, 3),
  write(step, ctx) {
    const weights = ctx.operands[step.inputs[1]];
    const [units, depth] = weights.shape;
    const values = weights.value as ArrayLike<number>;
    const columns = () => {
      const made = new Uint8Array(units * depth);
      for (let u = 0; u < units; u++) {
        for (let p = 0; p < depth; p++) made[p * units + u] = values[u * depth + p];
      }
      return made;
    };
    const rows = rowsOf(step, ctx, depth);
    const product = ctx.temporary("dqfc");
    ctx.node(
      "DynamicQuantizeMatMul",
      [
        rows,
        ctx.madeFrom("weights", [depth, units], values, "columns", columns, "uint8"),
        ctx.constant("weights_scale", [], [weights.scale]),
        ctx.constant("weights_zero", [], [weights.zeroPoint], "uint8"),
      ],
      [product],
      {},
      "com.microsoft",
    );
    const bias = ctx.operands[step.inputs[2]].value as ArrayLike<number> | undefined;
    let result = product;
    if (!bias || Array.from(bias).some((v) => v !== 0)) {
      result = ctx.temporary("biased");
      ctx.node("Add", [product, ctx.input(step, 2)], [result]);
    }
    ctx.activate(result, ctx.scalar(step, 3), ctx.name(step.outputs[0]));
  },
};

const softmax: ExportRule = {
  supports: (step, ctx) =>
    float32Only(step, ctx) && ctx.isConstant(step, 1) &&
    (step.inputs.length < 3 || ctx.isConstant(step, 2)),
  write(step, ctx) {
    const beta = ctx.scalar(step, 1);
    const axis = step.inputs.length > 2 ? ctx.scalar(step, 2) : -1;
    let input = ctx.input(step, 0);
    if (beta !== 1) {
      const scaled = ctx.temporary("beta");
      ctx.node("Mul", [input, ctx.constant("beta", [], [beta])], [scaled]);
      input = scaled;
    }
    ctx.node("Softmax", [input], [ctx.name(step.outputs[0])], { axis });
  },
};

/**
 * ONNX Resize's scales and sizes inputs for a resize step: whole scale factors as scales
 * (the output is then exactly the input times the factor, so ONNX maps coordinates by the
 * same ratio NNAPI does, and the model does not depend on the extents that come at
 * execution), else the output's size.
 */
function resizeTarget(step: SubgraphStep, ctx: ExportContext, nchw: boolean): [string, string] {
  if (ctx.operands[step.inputs[1]].type === "FLOAT32") {
    const [width, height] = [ctx.scalar(step, 1), ctx.scalar(step, 2)];
    if (Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0) {
      // Resize runs on NCHW either way (inNchw transposes an NHWC step around it).
      return [ctx.constant("scales", [4], [1, 1, height, width]), ""];
    }
  }
  const out = ctx.operands[step.outputs[0]].shape;
  const sizes = nchw ? [...out] : [out[0], out[3], out[1], out[2]];
  return ["", ctx.constant("sizes", [4], sizes, "int64")];
}

/**
 * RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR (TensorFlow's resize, as NNAPI defines them):
 * ONNX's Resize to the output's size, its coordinate mode from the flags (align_corners,
 * half_pixel_centers, else asymmetric) and, for nearest, the rounding TensorFlow uses.
 */
function resize(nearest: boolean): ExportRule {
  return {
    supports: (step, ctx) =>
      float32Only(step, ctx) && step.inputs.slice(1).every((_, j) => ctx.isConstant(step, j + 1)),
    write(step, ctx) {
      const flag = (j: number) => step.inputs.length > j && ctx.scalar(step, j) !== 0;
      const nchw = flag(3);
      const align = flag(4);
      const half = flag(5);
      const mode = align
        ? "align_corners"
        : half
        ? (nearest ? "tf_half_pixel_for_nn" : "half_pixel")
        : "asymmetric";
      inNchw(
        ctx,
        step,
        { nchw, activation: 0, label: "resize" },
        (x, y) =>
          ctx.node("Resize", [x, "", ...resizeTarget(step, ctx, nchw)], [y], {
            mode: { text: nearest ? "nearest" : "linear" },
            coordinate_transformation_mode: { text: mode },
            ...(nearest ? { nearest_mode: { text: align ? "round_prefer_ceil" : "floor" } } : {}),
          }),
      );
    },
  };
}

/** The parameters of a TRANSPOSE_CONV_2D step, by NNAPI's own rule. */
function transposeParams(step: SubgraphStep, ctx: ExportContext) {
  return transposeConvolutionParams(
    step.inputs.map((i) => ({ ...ctx.operands[i], value: ctx.operands[i].value })),
  );
}

/**
 * TRANSPOSE_CONV_2D as ConvTranspose (the OHWI filter re-laid out as ONNX's [in, out, H, W]),
 * where its padding is not negative (NNAPI's SAME may leave a negative tail, which ONNX's
 * pads cannot express: not claimed).
 */
const transposeConvolution: ExportRule = {
  supports(step, ctx) {
    // The implicit form's output shape (input 3) is a TENSOR_INT32.
    const shapeInput = step.inputs.length === 9 ? [3] : [];
    if (!float32Only(step, ctx, shapeInput) || !ctx.isConstant(step, 1)) return false;
    if (!step.inputs.slice(3).every((_, j) => ctx.isConstant(step, j + 3))) return false;
    const { padding } = transposeParams(step, ctx);
    return [padding.left, padding.right, padding.top, padding.bottom].every((p) => p >= 0);
  },
  write(step, ctx) {
    const p = transposeParams(step, ctx);
    const filter = ctx.operands[step.inputs[1]];
    const [o, kh, kw, i] = filter.shape;
    const values = filter.value as Float32Array;
    const w = ctx.madeFrom("filter", [i, o, kh, kw], values, "TRANSPOSE_CONV_2D IOHW", () => {
      const weights = new Float32Array(i * o * kh * kw);
      for (let c = 0; c < i; c++) {
        for (let out = 0; out < o; out++) {
          for (let y = 0; y < kh; y++) {
            for (let x = 0; x < kw; x++) {
              weights[((c * o + out) * kh + y) * kw + x] =
                values[((out * kh + y) * kw + x) * i + c];
            }
          }
        }
      }
      return weights;
    });
    inNchw(
      ctx,
      step,
      { nchw: p.nchw, activation: p.activation, label: "deconv" },
      (x, y) =>
        ctx.node("ConvTranspose", [x, w, ctx.input(step, 2)], [y], windowAttributes(p, [kh, kw])),
    );
  },
};

export const LAYER_EXPORTS: { readonly [T in OperationType]?: ExportRule } = {
  TRANSPOSE_CONV_2D: transposeConvolution,
  RESIZE_BILINEAR: resize(false),
  RESIZE_NEAREST_NEIGHBOR: resize(true),
  CONV_2D: convolution("CONV_2D"),
  DEPTHWISE_CONV_2D: convolution("DEPTHWISE_CONV_2D"),
  AVERAGE_POOL_2D: pool("AveragePool"),
  MAX_POOL_2D: pool("MaxPool"),
  FULLY_CONNECTED: fullyConnected,
  DYNAMIC_QUANTIZE_FULLY_CONNECTED: dynamicQuantizeFullyConnected,
  SOFTMAX: softmax,
};
