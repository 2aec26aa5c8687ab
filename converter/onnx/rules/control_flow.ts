/**
 * If whose condition is known at conversion (typically a Shape-driven test that folded):
 * the selected branch is converted in place, its outputs naming the If's. A condition known
 * only at execution needs NNAPI's IF with referenced subgraphs, which the graph builder does
 * not build yet.
 */
import { NodeView } from "../context.ts";
import { list } from "../decode.ts";
import type { Rule } from "../rule.ts";
import { tensorFromProto } from "../tensors.ts";

const ifRule: Rule = {
  convert(node, ctx) {
    const condition = ctx.constant(node.inputs[0]);
    if (!condition) {
      throw new Error("an If whose condition is known only at execution is not supported yet");
    }
    if (condition.data.length !== 1) throw new Error("the condition is not a single value");
    const branch = node.graph(condition.data[0] ? "then_branch" : "else_branch");
    for (const proto of list(branch.initializer)) {
      ctx.setConstant(proto.name ?? "", tensorFromProto(proto));
    }
    ctx.convertNodes(list(branch.node).map((proto) => new NodeView(proto, node.index)));
    const outputs = list(branch.output);
    if (outputs.length !== node.outputs.length) {
      throw new Error(`the branch has ${outputs.length} outputs, the If ${node.outputs.length}`);
    }
    outputs.forEach((output, i) => {
      if (node.outputs[i]) ctx.alias(node.outputs[i], output.name ?? "");
    });
  },
};

export const CONTROL_FLOW_RULES: Record<string, Rule> = { If: ifRule };
