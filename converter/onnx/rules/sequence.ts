/**
 * ONNX sequences, as torch exports write them (SequenceEmpty, SequenceInsert inside a Loop,
 * ConcatFromSequence after it): NNAPI has no sequences, so a sequence lives in the
 * conversion only, as the list of the values it holds (`ConversionContext.setSequence`),
 * and each operator that reads one becomes the tensor operators it stands for (a Concat of
 * the values, an Unsqueeze of each where `new_axis` asks, a Split into them). Positions
 * must be known at conversion; a Loop that carries a sequence unrolls there (`loop.ts`).
 */
import type { ConversionContext } from "../context.ts";
import { type NodeProto, onnx } from "../decode.ts";
import { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { hostTensor } from "../tensors.ts";
import { normalizeAxis } from "./common.ts";

const INT = onnx.AttributeProto.AttributeType.INT;
const INTS = onnx.AttributeProto.AttributeType.INTS;

/** A position input known at conversion, in [-n, n) (or [-n, n] where `end` allows n). */
function position(
  ctx: ConversionContext,
  name: string | undefined,
  length: number,
  end: boolean,
): number {
  if (!name) return end ? length : length - 1;
  const tensor = ctx.requireConstant(name, "the position");
  if (tensor.data.length !== 1) throw new Error("the position is not a single value");
  const p = Number(tensor.data[0]);
  const p0 = p < 0 ? p + length : p;
  if (p0 < 0 || p0 > (end ? length : length - 1)) {
    throw new Error(`position ${p} is outside a sequence of ${length} values`);
  }
  return p0;
}

/** Converts tensor nodes standing in for a sequence operator, named after `node`. */
function convertAs(ctx: ConversionContext, node: NodeView, protos: NodeProto[]): void {
  ctx.convertNodes(protos.map((proto) => new NodeView(proto, node.index)));
}

/** An int64 constant named after `node`, for an input of a node standing in for it. */
function int64Constant(ctx: ConversionContext, name: string, values: number[]): string {
  ctx.setConstant(name, hostTensor("int64", [values.length], values));
  return name;
}

/**
 * An Unsqueeze or Squeeze node of one axis, in the form the opset takes (axes an input from
 * opset 13, an attribute before).
 */
function axesNode(
  ctx: ConversionContext,
  opType: "Unsqueeze" | "Squeeze",
  name: string,
  [input, output]: [string, string],
  axis: number,
): NodeProto {
  return ctx.opset >= 13
    ? { name, opType, input: [input, int64Constant(ctx, `${name}#axes`, [axis])], output: [output] }
    : {
      name,
      opType,
      input: [input],
      output: [output],
      attribute: [{ name: "axes", type: INTS, ints: [axis] }],
    };
}

const sequenceEmpty: Rule = {
  convert(node, ctx) {
    ctx.setSequence(node.outputs[0], []);
  },
};

const sequenceConstruct: Rule = {
  convert(node, ctx) {
    ctx.setSequence(node.outputs[0], node.inputs.map((name) => ctx.snapshot(name)));
  },
};

const sequenceInsert: Rule = {
  convert(node, ctx) {
    const [seq, tensor, at] = node.inputs;
    const items = [...ctx.sequence(seq)];
    ctx.value(tensor); // a tensor, produced
    items.splice(position(ctx, at, items.length, true), 0, ctx.snapshot(tensor));
    ctx.setSequence(node.outputs[0], items);
  },
};

const sequenceErase: Rule = {
  convert(node, ctx) {
    const [seq, at] = node.inputs;
    const items = [...ctx.sequence(seq)];
    items.splice(position(ctx, at, items.length, false), 1);
    ctx.setSequence(node.outputs[0], items);
  },
};

const sequenceAt: Rule = {
  convert(node, ctx) {
    const [seq, at] = node.inputs;
    const items = ctx.sequence(seq);
    ctx.alias(node.outputs[0], items[position(ctx, at, items.length, false)]);
  },
};

const sequenceLength: Rule = {
  convert(node, ctx) {
    ctx.setConstant(
      node.outputs[0],
      hostTensor("int64", [], [ctx.sequence(node.inputs[0]).length]),
    );
  },
};

/** ConcatFromSequence: a Concat of the values (each unsqueezed first with `new_axis`). */
const concatFromSequence: Rule = {
  convert(node, ctx) {
    const items = ctx.sequence(node.inputs[0]);
    if (items.length === 0) throw new Error("the sequence is empty");
    const stacked = node.int("new_axis", 0) === 1;
    const rank = ctx.dims(items[0]).length + (stacked ? 1 : 0);
    const axis = normalizeAxis(node.int("axis"), rank);
    const name = (what: string) => `${node.name || node.outputs[0]}#${what}`;
    const unsqueezed = stacked ? items.map((_, k) => name(`unsqueezed${k}`)) : items;
    const protos: NodeProto[] = stacked
      ? items.map((item, k) =>
        axesNode(ctx, "Unsqueeze", name(`unsqueeze${k}`), [item, unsqueezed[k]], axis)
      )
      : [];
    protos.push({
      name: name("concat"),
      opType: "Concat",
      input: [...unsqueezed],
      output: [node.outputs[0]],
      attribute: [{ name: "axis", type: INT, i: axis }],
    });
    convertAs(ctx, node, protos);
  },
};

/**
 * SplitToSequence: a Split into the values (parts of `split`, or of 1 along the axis, then
 * squeezed unless `keepdims`); the extent along the axis must be known at conversion.
 */
const splitToSequence: Rule = {
  convert(node, ctx) {
    const [input, splitName] = node.inputs;
    const dims = ctx.dims(input);
    const axis = normalizeAxis(node.int("axis", 0), dims.length);
    const extent = dims[axis];
    if (!extent) throw new Error(`the extent along axis ${axis} is known only at execution`);
    const name = (what: string) => `${node.name || node.outputs[0]}#${what}`;
    let parts: number[];
    const given = splitName ? ctx.requireConstant(splitName, "split") : undefined;
    if (given && given.dims.length === 0) {
      const size = Number(given.data[0]);
      parts = Array.from(
        { length: Math.ceil(extent / size) },
        (_, k) => Math.min(size, extent - k * size),
      );
    } else if (given) {
      parts = Array.from(given.data as ArrayLike<number>, Number);
    } else {
      parts = new Array(extent).fill(1);
    }
    const squeeze = !given && node.int("keepdims", 1) === 0;
    const pieces = parts.map((_, k) => name(`part${k}`));
    const protos: NodeProto[] = [{
      name: name("split"),
      opType: "Split",
      input: ctx.opset >= 13 ? [input, int64Constant(ctx, name("sizes"), parts)] : [input],
      output: pieces,
      attribute: [
        { name: "axis", type: INT, i: axis },
        ...(ctx.opset >= 13 ? [] : [{ name: "split", type: INTS, ints: parts }]),
      ],
    }];
    const items = squeeze ? pieces.map((_, k) => name(`item${k}`)) : pieces;
    if (squeeze) {
      pieces.forEach((piece, k) =>
        protos.push(axesNode(ctx, "Squeeze", name(`squeeze${k}`), [piece, items[k]], axis))
      );
    }
    convertAs(ctx, node, protos);
    ctx.setSequence(node.outputs[0], items.map((item) => ctx.snapshot(item)));
  },
};

export const SEQUENCE_RULES: Record<string, Rule> = {
  SequenceEmpty: sequenceEmpty,
  SequenceConstruct: sequenceConstruct,
  SequenceInsert: sequenceInsert,
  SequenceErase: sequenceErase,
  SequenceAt: sequenceAt,
  SequenceLength: sequenceLength,
  ConcatFromSequence: concatFromSequence,
  SplitToSequence: splitToSequence,
};
