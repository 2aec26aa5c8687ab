/**
 * If. A condition known at conversion (typically a Shape-driven test that folded) selects a
 * branch whose nodes join the graph in place. Otherwise If becomes NNAPI's IF (HAL 1.3), its
 * branches referenced subgraphs (`../subgraph.ts` makes the outer values they read explicit
 * inputs). Loop (`loop.ts`) is registered here too.
 */
import { type ConversionContext } from "../context.ts";
import { NodeView } from "../node_view.ts";
import { type GraphProto, list } from "../decode.ts";
import type { Rule } from "../rule.ts";
import {
  bindOutputs,
  conditionOperand,
  convertSubgraph,
  outerInput,
  outerReads,
  runtimeValues,
} from "../subgraph.ts";
import { loop } from "./loop.ts";
import { tensorFromProto } from "../tensors.ts";

/** The selected branch's nodes, converted into the enclosing graph. */
function inlineBranch(ctx: ConversionContext, node: NodeView, branch: GraphProto): void {
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
}

/** An outer operand's dimensions where the branches agree, 0 where they differ. */
function joinedDimensions(a: readonly number[], b: readonly number[]): number[] {
  if (a.length !== b.length) return [];
  return a.map((d, i) => d === b[i] ? d : 0);
}

const ifRule: Rule = {
  convert(node, ctx) {
    const thenGraph = node.graph("then_branch");
    const elseGraph = node.graph("else_branch");
    const condition = ctx.constant(node.inputs[0]);
    if (condition) {
      if (condition.data.length !== 1) throw new Error("the condition is not a single value");
      return inlineBranch(ctx, node, condition.data[0] ? thenGraph : elseGraph);
    }
    const passed = runtimeValues(ctx, [
      ...new Set([...outerReads(thenGraph), ...outerReads(elseGraph)]),
    ]);
    const inputs = passed.map((name) => outerInput(ctx, name));
    const branches = (["then_branch", "else_branch"] as const).map((branch) => {
      try {
        return convertSubgraph(ctx, branch === "then_branch" ? thenGraph : elseGraph, inputs);
      } catch (error) {
        // Both branches must convert for the shapes given, though only one may ever run for
        // the inputs a client sends (Silero VAD's 8 kHz branch cannot take a 16 kHz frame).
        const taken = branch === "then_branch" ? "true" : "false";
        const reason = error instanceof Error ? error.message : String(error);
        throw new Error(
          `the condition '${node.inputs[0]}' is known only at execution, so both branches ` +
            `become subgraphs, and ${branch} (taken when it is ${taken}) does not convert: ` +
            `${reason}. If the condition depends on an input your use fixes (a sample rate), ` +
            `fix its value at import (?value=input:v) and the branch is chosen then`,
        );
      }
    });
    const [then, otherwise] = branches;
    for (const branch of branches) {
      if (branch.outputs.length !== node.outputs.length) {
        throw new Error(
          `a branch has ${branch.outputs.length} outputs, the If ${node.outputs.length}`,
        );
      }
    }
    then.outputs.forEach((a, j) => {
      const b = otherwise.outputs[j].operand;
      if (a.operand.type !== b.type || a.operand.scale !== b.scale) {
        throw new Error(
          `output ${j} is ${a.operand.type} in then_branch and ${b.type} in else_branch`,
        );
      }
    });
    const outputs = bindOutputs(
      ctx,
      node.outputs,
      then.outputs,
      (j) =>
        joinedDimensions(
          then.outputs[j].operand.dimensions,
          otherwise.outputs[j].operand.dimensions,
        ),
    );
    ctx.builder.operation("IF", [
      conditionOperand(ctx, node.inputs[0]),
      ctx.builder.subgraph(then.index),
      ctx.builder.subgraph(otherwise.index),
      ...passed.map((name) => ctx.operand(name)),
    ], outputs);
  },
};

export const CONTROL_FLOW_RULES: Record<string, Rule> = { If: ifRule, Loop: loop };
