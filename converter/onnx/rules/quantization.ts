/**
 * QuantizeLinear onto QUANTIZE (uint8 -> TENSOR_QUANT8_ASYMM, int8 -> _SIGNED) and
 * DequantizeLinear onto DEQUANTIZE; a DequantizeLinear of constant weights (per tensor or
 * per axis) folds into float constants. A QDQ model thus runs its float operations between
 * exact quantize/dequantize steps, as the ONNX definition of those models reads.
 */
import type { ConversionContext } from "../context.ts";
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { allocateHost, type HostTensor } from "../tensors.ts";
import { normalizeAxis, requireFloat } from "./common.ts";

/** A per-tensor scale and zero point, constants. */
function perTensor(ctx: ConversionContext, node: NodeView) {
  const scale = ctx.requireConstant(node.inputs[1], "the scale");
  const zeroPointName = node.input(2);
  const zeroPoint = zeroPointName
    ? ctx.requireConstant(zeroPointName, "the zero point")
    : undefined;
  if (scale.data.length !== 1 || (zeroPoint && zeroPoint.data.length !== 1)) {
    throw new Error("per-axis quantization of a runtime tensor is not supported");
  }
  const signed = zeroPoint?.type === "int8";
  if (zeroPoint && zeroPoint.type !== "int8" && zeroPoint.type !== "uint8") {
    throw new Error(`zero point type ${zeroPoint.type} is not supported (uint8 or int8)`);
  }
  return { scale: scale.data[0], zeroPoint: zeroPoint ? zeroPoint.data[0] : 0, signed };
}

/**
 * The quantization a constant 8-bit tensor moved at execution keeps (an embedding table
 * gathered by token ids, then dequantized): the per-tensor scale and zero point of the
 * DequantizeLinear nodes that alone read the moved value; undefined if anything else reads it
 * or they differ.
 */
export function dequantizedBy(
  ctx: ConversionContext,
  name: string,
): { scale: number; zeroPoint: number; signed: boolean } | undefined {
  const readers = ctx.consumers(name);
  if (readers.length === 0 || readers.length !== ctx.uses(name)) return undefined;
  const found = readers.map((node) =>
    node.opType === "DequantizeLinear" && node.inputs[0] === name &&
      ctx.constant(node.inputs[1]) !== undefined &&
      (!node.input(2) || ctx.constant(node.input(2)!) !== undefined)
      ? perTensor(ctx, node)
      : undefined
  );
  const [first] = found;
  const same = found.every((q) =>
    q && q.scale === first!.scale && q.zeroPoint === first!.zeroPoint && q.signed === first!.signed
  );
  return same ? first : undefined;
}

const quantizeLinear: Rule = {
  convert(node, ctx) {
    const x = node.inputs[0];
    requireFloat(ctx, x);
    const { scale, zeroPoint, signed } = perTensor(ctx, node);
    ctx.emitAs(node.outputs[0], "QUANTIZE", [ctx.operand(x)], {
      type: signed ? "TENSOR_QUANT8_ASYMM_SIGNED" : "TENSOR_QUANT8_ASYMM",
      elementType: signed ? "int8" : "uint8",
      quant: { scale: Math.fround(scale), zeroPoint },
    });
  },
};

/** (q - zeroPoint) * scale on the host, per tensor or along `axis`. */
function dequantizeHost(node: NodeView, q: HostTensor, scale: HostTensor, zeroPoint?: HostTensor) {
  const out = allocateHost("float32", q.dims);
  const perAxis = scale.data.length > 1;
  const axis = perAxis ? normalizeAxis(node.int("axis", 1), q.dims.length) : 0;
  const inner = perAxis ? q.dims.slice(axis + 1).reduce((a, b) => a * b, 1) : 1;
  const extent = perAxis ? q.dims[axis] : 1;
  for (let i = 0; i < q.data.length; i++) {
    const c = perAxis ? Math.floor(i / inner) % extent : 0;
    out.data[i] = Math.fround((q.data[i] - (zeroPoint?.data[c] ?? 0)) * scale.data[c]);
  }
  return out;
}

const dequantizeLinear: Rule = {
  fold: (node, [q, scale, zeroPoint]) => [dequantizeHost(node, q!, scale!, zeroPoint)],
  convert(node, ctx) {
    const x = node.inputs[0];
    const value = ctx.value(x);
    if (
      value.kind !== "operand" || (value.elementType !== "uint8" && value.elementType !== "int8")
    ) {
      throw new Error(`input '${x}' is not a quantized tensor from QuantizeLinear or an input`);
    }
    const { scale, zeroPoint } = perTensor(ctx, node);
    const operand = value.operand;
    if (Math.fround(scale) !== operand.scale || zeroPoint !== operand.zeroPoint) {
      throw new Error("the scale and zero point differ from those the tensor was quantized with");
    }
    ctx.emitAs(node.outputs[0], "DEQUANTIZE", [operand], {
      type: "TENSOR_FLOAT32",
      elementType: "float32",
    });
  },
};

export const QUANTIZATION_RULES: Record<string, Rule> = {
  QuantizeLinear: quantizeLinear,
  DequantizeLinear: dequantizeLinear,
};
