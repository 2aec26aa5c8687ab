/**
 * Expand, Tile, ConstantOfShape and CastLike. Expand broadcasts onto a shape: on the host for
 * constants, ADD of zeros of the target's shape otherwise (constant zeros where the target is known at
 * conversion, FILLed at execution where it is computed there; booleans OR a false of that
 * shape). Tile is NNAPI's TILE, its multiples known at conversion or computed at execution.
 * ConstantOfShape folds, or FILLs a shape computed at execution. CastLike is a Cast to the
 * other input's element type.
 */
import { FUSED_NONE } from "../../../nnapi/types.ts";
import type { BuiltOperand } from "../../graph_builder.ts";
import { onnx } from "../decode.ts";
import { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { broadcastShape } from "../../../kernels/elementwise_binary.ts";
import { allocateHost, type HostTensor, hostTensor, hostValues, symbolOf } from "../tensors.ts";
import {
  broadcastDims,
  broadcastTo,
  filled,
  knownProduct,
  sameTypeAs,
  specOf,
  tensorConstant,
} from "./common.ts";

const DataType = onnx.TensorProto.DataType;
const INT = onnx.AttributeProto.AttributeType.INT;

/** ONNX's data type codes of the element types a CastLike may target. */
const TYPE_CODES: Record<string, number> = {
  float32: DataType.FLOAT,
  float16: DataType.FLOAT16,
  int32: DataType.INT32,
  int64: DataType.INT64,
  bool: DataType.BOOL,
};

/** Integer values of a shape-like tensor, 0 for extents known only at execution. */
function extents(t: HostTensor): number[] {
  return Array.from(t.data as ArrayLike<number>, (v) => symbolOf(v) === undefined ? v : 0);
}

const expand: Rule = {
  fold(_node, [x, shape]) {
    const dims = broadcastShape(x!.dims, extents(shape!));
    if (!dims) throw new Error(`[${x!.dims}] does not broadcast to [${extents(shape!)}]`);
    return [broadcastTo(x!, dims)];
  },
  convert(node, ctx) {
    const [x, shape] = node.inputs;
    const values = ctx.value(shape);
    const target = values.kind === "constant" ? extents(values.tensor) : undefined;
    const rank = target?.length ?? ctx.operand(shape).dimensions[0];
    if (!rank) throw new Error("the target shape's length is known only at execution");
    const dims = broadcastDims(ctx.dims(x), target ?? new Array(rank).fill(0));
    const spec = { ...sameTypeAs(ctx, x), dims };
    const operand = ctx.operand(x);
    const known = target && knownProduct(target) !== undefined;
    if (known && dims.join() === operand.dimensions.join()) return ctx.alias(node.outputs[0], x);
    const none = ctx.builder.int32(FUSED_NONE);
    const zerosType = spec.type === "TENSOR_BOOL8" ? specOf("float32") : spec;
    const zeros = known
      ? tensorConstant(ctx, zerosType, target, hostValues(knownProduct(target)!))
      : filled(ctx, ctx.operand(shape), 0, {
        ...zerosType,
        dims: target ?? new Array(rank).fill(0),
      });
    let result: BuiltOperand;
    if (spec.type === "TENSOR_BOOL8") {
      const bool = { ...specOf("bool"), dims: zeros.dimensions };
      const [falses] = ctx.emit("NOT_EQUAL", [zeros, zeros], [bool]);
      [result] = ctx.emit("LOGICAL_OR", [operand, falses], [spec]);
    } else {
      [result] = ctx.emit("ADD", [operand, zeros, none], [spec]);
    }
    ctx.setOperand(node.outputs[0], result, spec.elementType);
  },
};

const tile: Rule = {
  fold(_node, [x, repeats]) {
    const times = extents(repeats!);
    if (times.length !== x!.dims.length) throw new Error("repeats must have one value per axis");
    const dims = x!.dims.map((d, i) => d * times[i]);
    const out = allocateHost(x!.type, dims);
    const strides = dims.map((_, i) => dims.slice(i + 1).reduce((a, b) => a * b, 1));
    const inStrides = x!.dims.map((_, i) => x!.dims.slice(i + 1).reduce((a, b) => a * b, 1));
    for (let k = 0; k < out.data.length; k++) {
      let from = 0;
      for (let i = 0; i < dims.length; i++) {
        from += (Math.floor(k / strides[i]) % dims[i] % x!.dims[i]) * inStrides[i];
      }
      out.data[k] = x!.data[from];
    }
    return [out];
  },
  convert(node, ctx) {
    const [x, repeats] = node.inputs;
    const values = ctx.value(repeats);
    const times = values.kind === "constant" ? extents(values.tensor) : undefined;
    const input = ctx.dims(x);
    if (times && times.length !== input.length) {
      throw new Error("repeats must have one value per axis");
    }
    const dims = input.map((d, i) => (times?.[i] ?? 0) * d);
    ctx.emitAs(node.outputs[0], "TILE", [ctx.operand(x), ctx.operand(repeats)], {
      ...sameTypeAs(ctx, x),
      dims,
    });
  },
};

const constantOfShape: Rule = {
  fold(node, [shape]) {
    const value = node.has("value") ? node.tensor("value") : hostTensor("float32", [1], [0]);
    const out = allocateHost(value.type, [...shape!.data]);
    out.data.fill(value.data[0]);
    return [out];
  },
  // A shape computed at execution: FILL there.
  convert(node, ctx) {
    const value = node.has("value") ? node.tensor("value") : hostTensor("float32", [1], [0]);
    const shape = ctx.value(node.inputs[0]);
    const dims = shape.kind === "constant"
      ? Array.from(shape.tensor.data as ArrayLike<number>, (v) => symbolOf(v) ? 0 : v)
      : new Array(ctx.operand(node.inputs[0]).dimensions[0] ?? 0).fill(0);
    const spec = { ...specOf(value.type), dims };
    const result = filled(ctx, ctx.operand(node.inputs[0]), value.data[0], spec);
    ctx.setOperand(node.outputs[0], result, value.type);
  },
};

/** CastLike: a Cast to the element type of its second input. */
const castLike: Rule = {
  convert(node, ctx) {
    const [x, like] = node.inputs;
    const type = ctx.elementType(like);
    const code = TYPE_CODES[type];
    if (code === undefined) throw new Error(`a cast to ${type} is not supported`);
    ctx.convertNodes([
      new NodeView({
        name: `${node.name}#cast`,
        opType: "Cast",
        input: [x],
        output: [node.outputs[0]],
        attribute: [{ name: "to", type: INT, i: code }],
      }, node.index),
    ]);
  },
};

export const EXPAND_RULES: Record<string, Rule> = {
  Expand: expand,
  Tile: tile,
  CastLike: castLike,
  ConstantOfShape: constantOfShape,
};
