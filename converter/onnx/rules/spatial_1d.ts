/**
 * 1-D windowed operators (Conv, ConvTranspose, MaxPool, AveragePool over [N, C, L]) through
 * their 2-D rules: NNAPI has only 2-D image operations, so the input gains a height of 1
 * (EXPAND_DIMS to [N, C, 1, L]), the node is seen with a height-1 kernel (its weights
 * [.., .., k] as [.., .., 1, k]), and the result loses the height again (SQUEEZE). Both
 * operations keep extents known only at execution.
 */
import { NodeView } from "../node_view.ts";
import type { ConversionContext } from "../context.ts";
import { type AttributeProto, onnx } from "../decode.ts";
import type { Rule } from "../rule.ts";
import { sameTypeAs } from "./common.ts";

const AttributeType = onnx.AttributeProto.AttributeType;

/** Per-axis attributes and the value the added height axis takes in each. */
const HEIGHT_VALUES: Readonly<Record<string, number>> = {
  kernel_shape: 1,
  strides: 1,
  dilations: 1,
  output_padding: 0,
  output_shape: 1,
};

/** Attributes the 2-D rules read that do not depend on the number of axes. */
const SCALAR_INTS = ["group", "ceil_mode", "count_include_pad", "storage_order"];

/** Where the lifted value of a node's input or output lives in the context. */
function liftedName(name: string): string {
  return `${name}#2d`;
}

/** The node's attributes for an input [N, C, 1, L]; every per-axis list must hold one value. */
function liftedAttributes(node: NodeView): AttributeProto[] {
  const attributes: AttributeProto[] = [];
  const oneAxis = (name: string) => {
    const values = node.ints(name);
    const expected = name === "pads" ? 2 : 1;
    if (values.length !== expected) {
      throw new Error(
        `${name} [${values}] has ${values.length} values; a 1-D ${node.opType} takes ${expected}`,
      );
    }
    return values;
  };
  for (const [name, height] of Object.entries(HEIGHT_VALUES)) {
    if (node.has(name)) {
      attributes.push({ name, type: AttributeType.INTS, ints: [height, ...oneAxis(name)] });
    }
  }
  if (node.has("pads")) {
    const [begin, end] = oneAxis("pads");
    attributes.push({ name: "pads", type: AttributeType.INTS, ints: [0, begin, 0, end] });
  }
  for (const name of SCALAR_INTS) {
    if (node.has(name)) attributes.push({ name, type: AttributeType.INT, i: node.int(name) });
  }
  if (node.has("auto_pad")) {
    const s = new TextEncoder().encode(node.string("auto_pad"));
    attributes.push({ name: "auto_pad", type: AttributeType.STRING, s });
  }
  return attributes;
}

/**
 * A rule that also takes 3-D input [N, C, L] by running `rule` (a 2-D NCHW rule) on the
 * input with a height of 1; `weights` is the index of the constant input whose last axis is
 * the kernel (Conv's and ConvTranspose's weights), if there is one. Other ranks go to `rule`
 * unchanged.
 */
export function withOneDimensional(rule: Rule, options: { weights?: number } = {}): Rule {
  return {
    convert(node, ctx) {
      const x = node.inputs[0];
      if (ctx.dims(x).length !== 3) return rule.convert(node, ctx);
      const attribute = liftedAttributes(node);
      const inputs = [...node.inputs];
      inputs[0] = liftInput(ctx, node, x);
      const w = options.weights === undefined ? undefined : node.input(options.weights);
      if (w !== undefined) {
        const weights = ctx.requireConstant(w, `${node.opType}'s weights`);
        if (weights.dims.length !== 3) {
          throw new Error(
            `the weights have rank ${weights.dims.length}; a 1-D ${node.opType} takes rank 3`,
          );
        }
        const [outer, inner, kernel] = weights.dims;
        inputs[options.weights!] = liftedName(w);
        ctx.setConstant(liftedName(w), { ...weights, dims: [outer, inner, 1, kernel] });
      }
      // Only the main output is lifted: a rule that refuses a used extra output (MaxPool's
      // Indices) still sees it by its own name.
      const output = node.outputs[0];
      const outputs = [liftedName(output), ...node.outputs.slice(1)];
      const lifted = new NodeView({
        name: node.name,
        opType: node.opType,
        domain: node.domain,
        input: inputs,
        output: outputs,
        attribute,
      }, node.index);
      rule.convert(lifted, ctx);
      const s = ctx.builder;
      const height = s.constant("TENSOR_INT32", [1], new Int32Array([2]));
      ctx.emitAs(
        output,
        "SQUEEZE",
        [ctx.operand(liftedName(output)), height],
        sameTypeAs(ctx, liftedName(output)),
      );
    },
  };
}

/** [N, C, L] as [N, C, 1, L], named for this node. */
function liftInput(ctx: ConversionContext, node: NodeView, x: string): string {
  const name = liftedName(`${node.outputs[0]}:${x}`);
  const spec = sameTypeAs(ctx, x);
  const [expanded] = ctx.emit("EXPAND_DIMS", [ctx.operand(x), ctx.builder.int32(2)], [spec]);
  ctx.setOperand(name, expanded, spec.elementType);
  return name;
}
