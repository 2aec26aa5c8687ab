/**
 * Dynamic quantization (what `onnxruntime.quantization.quantize_dynamic` and Hugging Face's
 * optimum emit): DynamicQuantizeLinear picks a tensor's scale and zero point at execution,
 * and MatMulInteger / ConvInteger multiply the 8-bit values into int32 sums. NNAPI's
 * quantized operands carry their scale in the model, so a scale chosen at execution has no
 * NNAPI operand type. These integers therefore travel as exact float32 values ("carried":
 * a TENSOR_FLOAT32 operand whose ONNX element type stays uint8, int8 or int32): the
 * quantization is computed with float operations that round exactly as onnxruntime does
 * (x / scale rounded half to even, clamped), and the products are float convolutions and
 * matrix products of integers, exact while the sums stay below 2^24 (beyond that, within a
 * float32 rounding). A Cast of a carried int32 to float is then the value itself.
 *
 * The common form of whole dense layers (what `quantize_dynamic` writes for every MatMul:
 * the input's DynamicQuantizeLinear read only by MatMulIntegers with constant weights and
 * one zero point each, each followed by a Cast to float and a Mul by the product of the two
 * scales) becomes one DYNAMIC_QUANTIZE_FULLY_CONNECTED per layer instead, nnserve's
 * extension that computes exactly that: a native device runs it as its integer kernel.
 */
import { FUSED_NONE, type OperationType } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import type { ConversionContext, OutputSpec } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import type { HostTensor } from "../tensors.ts";
import { convAttributes, convolutionPlan, emitConvolution } from "./conv.ts";
import { matMulRows, transposedWeights } from "./matmul.ts";
import { transpose } from "../../../kernels/shape_transform.ts";
import { runtimeMatMul } from "./matmul_runtime.ts";
import { floatConstant, specOf } from "./common.ts";

const FLOAT: OutputSpec = specOf("float32");
/** Adding then subtracting 1.5 * 2^23 rounds a float32 of magnitude below 2^22 half to even. */
const ROUNDING_MAGIC = 12582912;

/**
 * Operands holding `x - zeroPoint` already, keyed by the zero point operand they are centered
 * on: DynamicQuantizeLinear hands its consumers that difference when they would only
 * subtract the zero point again.
 */
const centeredOn = new WeakMap<BuiltOperand, BuiltOperand>();

/** Emits one float32 operation. */
function float(ctx: ConversionContext, type: OperationType, inputs: BuiltOperand[]) {
  return ctx.emit(type, inputs, [FLOAT])[0];
}

/** A float32 constant [1] (broadcast against any tensor). */
function scalar(ctx: ConversionContext, value: number): BuiltOperand {
  return floatConstant(ctx, FLOAT, [1], [value]);
}

/** a (op) b for ADD, SUB, MUL and DIV (no fused activation). */
function arithmetic(
  ctx: ConversionContext,
  type: "ADD" | "SUB" | "MUL" | "DIV",
  a: BuiltOperand,
  b: BuiltOperand,
) {
  return float(ctx, type, [a, b, ctx.builder.int32(FUSED_NONE)]);
}

/** Whether a value is an 8-bit or int32 integer tensor carried as float32. */
function isCarried(ctx: ConversionContext, name: string): boolean {
  const value = ctx.value(name);
  return value.kind === "operand" && value.operand.type === "TENSOR_FLOAT32" &&
    ["uint8", "int8", "int32"].includes(value.elementType);
}

/**
 * One dense layer a DynamicQuantizeLinear feeds: its MatMulInteger by constant 8-bit
 * weights, the Cast of the sums to float and the Mul by the product of the two scales
 * (`scaling`, a Mul of the input's scale by the weights' constant one).
 */
interface DenseLayer {
  matMul: NodeView;
  cast: NodeView;
  rescale: NodeView;
  scaling: NodeView;
  weights: HostTensor;
  weightsZeroPoint: number;
  weightsScale: number;
}

/** ONNX's element type code of float32 (a Cast's `to`). */
const ONNX_FLOAT = 1;

/** The other input of a two-input node besides `name` (undefined when both are `name`). */
function otherInput(node: NodeView, name: string): string | undefined {
  const [a, b] = node.inputs;
  if (a === name && b !== name) return b;
  if (b === name && a !== name) return a;
  return undefined;
}

/** Whether `readers` are all the uses of `name` (no graph output, no other node). */
function readsAll(ctx: ConversionContext, name: string, readers: readonly NodeView[]): boolean {
  return readers.length > 0 && ctx.consumers(name).length === ctx.uses(name) &&
    ctx.consumers(name).every((r) => readers.includes(r));
}

/**
 * The dense layers a DynamicQuantizeLinear feeds, when its three outputs go to them alone
 * (see the file's comment); undefined otherwise.
 */
function denseLayers(ctx: ConversionContext, node: NodeView): DenseLayer[] | undefined {
  const [y, yScale, yZeroPoint] = node.outputs;
  const matMuls = ctx.consumers(y);
  if (
    !readsAll(ctx, y, matMuls) || !readsAll(ctx, yZeroPoint, matMuls) ||
    !matMuls.every((m) =>
      m.opType === "MatMulInteger" && m.inputs[0] === y && m.inputs[1] !== y &&
      m.input(2) === yZeroPoint
    )
  ) {
    return undefined;
  }
  const scalings = ctx.consumers(yScale);
  if (!readsAll(ctx, yScale, scalings)) return undefined;
  const weightsScales = new Map<string, { scaling: NodeView; scale: number }>();
  for (const scaling of scalings) {
    const other = otherInput(scaling, yScale);
    const scale = other === undefined ? undefined : ctx.constant(other);
    if (scaling.opType !== "Mul" || scale?.type !== "float32" || scale.data.length !== 1) {
      return undefined;
    }
    weightsScales.set(scaling.outputs[0], { scaling, scale: Number(scale.data[0]) });
  }
  const layers: DenseLayer[] = [];
  for (const matMul of matMuls) {
    const weights = ctx.constant(matMul.inputs[1]);
    const zeroPointName = matMul.input(3);
    const zeroPoint = zeroPointName ? ctx.constant(zeroPointName) : undefined;
    const cast = ctx.soleConsumer(matMul.outputs[0]);
    const rescale = cast && ctx.soleConsumer(cast.outputs[0]);
    const scaleName = rescale && otherInput(rescale, cast.outputs[0]);
    const scaled = scaleName === undefined ? undefined : weightsScales.get(scaleName);
    if (
      !weights || weights.dims.length !== 2 || !["uint8", "int8"].includes(weights.type) ||
      (zeroPointName && zeroPoint?.data.length !== 1) || cast?.opType !== "Cast" ||
      cast.int("to") !== ONNX_FLOAT || rescale?.opType !== "Mul" || !scaled
    ) {
      return undefined;
    }
    layers.push({
      matMul,
      cast,
      rescale,
      scaling: scaled.scaling,
      weights,
      weightsZeroPoint: zeroPoint ? Number(zeroPoint.data[0]) : 0,
      weightsScale: scaled.scale,
    });
  }
  // Each scaling is read by these layers' rescales alone.
  for (const [name, { scaling }] of weightsScales) {
    const readers = layers.filter((l) => l.scaling === scaling).map((l) => l.rescale);
    if (!readsAll(ctx, name, readers)) return undefined;
  }
  return layers;
}

/** Each dense layer as one DYNAMIC_QUANTIZE_FULLY_CONNECTED on the float input `x`. */
function emitDenseLayers(ctx: ConversionContext, x: string, layers: readonly DenseLayer[]) {
  for (const layer of layers) {
    const { weights } = layer;
    const [k, n] = weights.dims;
    const signed = weights.type === "int8";
    const values = signed ? new Int8Array(n * k) : new Uint8Array(n * k);
    transpose(weights.data, weights.dims, [1, 0], values);
    const matrix = ctx.builder.constant(
      signed ? "TENSOR_QUANT8_ASYMM_SIGNED" : "TENSOR_QUANT8_ASYMM",
      [n, k],
      values,
      { scale: layer.weightsScale, zeroPoint: layer.weightsZeroPoint },
    );
    matMulRows(ctx, {
      name: layer.rescale.outputs[0],
      a: x,
      k,
      n,
      product: (rows, name) =>
        ctx.emitAs(name, "DYNAMIC_QUANTIZE_FULLY_CONNECTED", [
          rows,
          matrix,
          floatConstant(ctx, FLOAT, [n], new Float64Array(n)),
          ctx.builder.int32(FUSED_NONE),
        ], FLOAT),
    });
    for (const done of [layer.matMul, layer.cast, layer.scaling, layer.rescale]) {
      if (!ctx.isAbsorbed(done)) ctx.absorb(done);
    }
  }
}

const dynamicQuantizeLinear: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    if (ctx.elementType(x) !== "float32") {
      throw new Error(`input '${x}' is ${ctx.elementType(x)}; DynamicQuantizeLinear takes float32`);
    }
    const layers = denseLayers(ctx, node);
    if (layers) return emitDenseLayers(ctx, x, layers);
    const [y, yScale, yZeroPoint] = node.outputs;
    const input = ctx.operand(x);
    const s = ctx.builder;
    const rank = input.dimensions.length;
    if (rank === 0) throw new Error(`input '${x}' has a rank known only at execution`);
    const allAxes = s.constant(
      "TENSOR_INT32",
      [rank],
      Int32Array.from({ length: rank }, (_, i) => i),
    );
    const zero = scalar(ctx, 0);
    // onnxruntime: the range [min(x, 0), max(x, 0)] over 255 steps (a scale of 1 when x is
    // all zeros), the zero point 0 - min / scale clamped and rounded half to even.
    const low = float(ctx, "MINIMUM", [
      float(ctx, "REDUCE_MIN", [input, allAxes, s.bool(false)]),
      zero,
    ]);
    const high = float(ctx, "MAXIMUM", [
      float(ctx, "REDUCE_MAX", [input, allAxes, s.bool(false)]),
      zero,
    ]);
    const range = arithmetic(ctx, "SUB", high, low);
    const flat = ctx.emit("EQUAL", [range, zero], [specOf("bool")])[0];
    const scale = float(ctx, "SELECT", [
      flat,
      scalar(ctx, 1),
      arithmetic(ctx, "DIV", range, scalar(ctx, 255)),
    ]);
    const unrounded = arithmetic(ctx, "SUB", zero, arithmetic(ctx, "DIV", low, scale));
    const clamped = float(ctx, "MINIMUM", [
      float(ctx, "MAXIMUM", [unrounded, zero]),
      scalar(ctx, 255),
    ]);
    const magic = scalar(ctx, ROUNDING_MAGIC);
    const zeroPoint = arithmetic(ctx, "SUB", arithmetic(ctx, "ADD", clamped, magic), magic);
    // y = clamp(x / scale, -zp, 255 - zp) rounded half to even, plus zp (MLAS's order).
    const scaled = arithmetic(ctx, "DIV", input, scale);
    const bounded = float(ctx, "MINIMUM", [
      float(ctx, "MAXIMUM", [scaled, arithmetic(ctx, "SUB", zero, zeroPoint)]),
      arithmetic(ctx, "SUB", scalar(ctx, 255), zeroPoint),
    ]);
    const centered = arithmetic(ctx, "SUB", arithmetic(ctx, "ADD", bounded, magic), magic);
    ctx.setOperand(yScale, scale, "float32");
    ctx.setOperand(yZeroPoint, zeroPoint, "uint8");
    if (onlyCentered(ctx, y, yZeroPoint)) {
      centeredOn.set(centered, zeroPoint);
      ctx.setOperand(y, centered, "uint8");
    } else {
      ctx.setOperand(y, arithmetic(ctx, "ADD", centered, zeroPoint), "uint8");
    }
  },
};

/**
 * Whether every reader of `y` is a MatMulInteger or ConvInteger that subtracts `zeroPoint`
 * from it first, so `y - zeroPoint` is all they need.
 */
function onlyCentered(ctx: ConversionContext, y: string, zeroPoint: string): boolean {
  const readers = ctx.consumers(y);
  return readers.length > 0 && readers.length === ctx.uses(y) &&
    readers.every((r) =>
      (r.opType === "MatMulInteger" || r.opType === "ConvInteger") && r.inputs[0] === y &&
      r.inputs[1] !== y && r.input(2) === zeroPoint
    );
}

/** A per-tensor zero point's value when constant (0 when omitted). */
function constantZeroPoint(ctx: ConversionContext, name: string | undefined, what: string) {
  if (!name) return 0;
  const tensor = ctx.constant(name);
  if (!tensor) return undefined;
  if (tensor.data.length !== 1) throw new Error(`${what} must be one value (per tensor)`);
  return tensor.data[0];
}

/**
 * The runtime 8-bit input `at` minus its zero point (input `at + 2`), as a carried float32
 * operand.
 */
function centeredInput(ctx: ConversionContext, node: NodeView, at: number, what: string) {
  const name = node.inputs[at];
  if (!isCarried(ctx, name)) {
    const value = ctx.value(name);
    const kind = value.kind === "constant" ? "a constant" : value.operand.type;
    throw new Error(
      `${what} ('${name}') is ${kind}; it must be the 8-bit output of DynamicQuantizeLinear`,
    );
  }
  const operand = ctx.operand(name);
  const zeroPointName = node.input(at + 2);
  if (!zeroPointName) return operand;
  const zeroPoint = constantZeroPoint(ctx, zeroPointName, `${what}'s zero point`);
  if (zeroPoint === 0) return operand;
  if (zeroPoint !== undefined) return arithmetic(ctx, "SUB", operand, scalar(ctx, zeroPoint));
  const runtime = ctx.operand(zeroPointName);
  if (runtime.dimensions.some((d) => d !== 1)) {
    throw new Error(`${what}'s zero point must be one value (per tensor)`);
  }
  if (centeredOn.get(operand) === runtime) return operand;
  return arithmetic(ctx, "SUB", operand, runtime);
}

/**
 * Constant 8-bit weights minus their zero point (one, or one per index of `axis`) as float
 * values; undefined when the weights are not constant.
 */
function centeredWeights(
  ctx: ConversionContext,
  node: NodeView,
  at: number,
  axis: number,
  what: string,
): HostTensor | undefined {
  const weights = ctx.constant(node.inputs[at]);
  if (!weights) return undefined;
  if (weights.type !== "uint8" && weights.type !== "int8") {
    throw new Error(`${what} is ${weights.type}, expected uint8 or int8`);
  }
  const zeroPointName = node.input(at + 2);
  const zeroPoint = zeroPointName
    ? ctx.requireConstant(zeroPointName, `${what}'s zero point`)
    : undefined;
  const extent = weights.dims[axis];
  if (zeroPoint && zeroPoint.data.length !== 1 && zeroPoint.data.length !== extent) {
    throw new Error(
      `${what}'s zero point has ${zeroPoint.data.length} values; expected 1 or ${extent}`,
    );
  }
  const inner = weights.dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const data = new Float64Array(weights.data.length);
  for (let i = 0; i < data.length; i++) {
    const index = zeroPoint && zeroPoint.data.length > 1 ? Math.floor(i / inner) % extent : 0;
    data[i] = weights.data[i] - (zeroPoint?.data[index] ?? 0);
  }
  return { type: "float32", dims: weights.dims, data };
}

const matMulInteger: Rule = {
  convert(node, ctx) {
    const out = node.outputs[0];
    const a = centeredInput(ctx, node, 0, "MatMulInteger's A");
    const aName = `${out}#a`;
    ctx.setOperand(aName, a, "float32");
    const bDims = ctx.dims(node.inputs[1]);
    // B's zero point is per column: along its last axis.
    const weights = centeredWeights(ctx, node, 1, bDims.length - 1, "MatMulInteger's B");
    if (weights) {
      const { w, n, k } = transposedWeights(weights);
      matMulRows(ctx, {
        name: out,
        a: aName,
        k,
        n,
        product: (rows, name) =>
          ctx.emitAs(name, "FULLY_CONNECTED", [
            rows,
            floatConstant(ctx, FLOAT, [n, k], w),
            floatConstant(ctx, FLOAT, [n], new Float64Array(n)),
            ctx.builder.int32(FUSED_NONE),
          ], FLOAT),
      });
    } else {
      const b = centeredInput(ctx, node, 1, "MatMulInteger's B");
      ctx.setOperand(`${out}#b`, b, "float32");
      runtimeMatMul(ctx, out, aName, `${out}#b`);
    }
    ctx.setOperand(out, ctx.operand(out), "int32");
  },
};

const convInteger: Rule = {
  convert(node, ctx) {
    const out = node.outputs[0];
    const input = centeredInput(ctx, node, 0, "ConvInteger's input");
    // The weights' zero point is per output channel: along axis 0 of OIHW.
    const weights = centeredWeights(ctx, node, 1, 0, "ConvInteger's weights");
    if (!weights) throw new Error("ConvInteger's weights must be a constant");
    const attributes = convAttributes(node, ctx, weights);
    const plan = convolutionPlan(attributes, { dims: weights.dims, values: weights.data });
    const outChannels = weights.dims[0];
    emitConvolution(ctx, {
      output: out,
      attributes,
      plan,
      input,
      filter: floatConstant(ctx, FLOAT, plan.filterDims, plan.filter),
      bias: floatConstant(ctx, FLOAT, [outChannels], new Float64Array(outChannels)),
      spec: FLOAT,
    });
    ctx.setOperand(out, ctx.operand(out), "int32");
  },
};

export const DYNAMIC_QUANTIZATION_RULES: Record<string, Rule> = {
  DynamicQuantizeLinear: dynamicQuantizeLinear,
  MatMulInteger: matMulInteger,
  ConvInteger: convInteger,
};
