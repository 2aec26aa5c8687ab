/**
 * If. A condition known at conversion (typically a Shape-driven test that folded) selects a
 * branch whose nodes join the graph in place. Otherwise If becomes NNAPI's IF (HAL 1.3), its
 * branches referenced subgraphs (`../subgraph.ts` makes the outer values they read explicit
 * inputs). Loop (`loop.ts`) is registered here too.
 */
import { type ConversionContext } from "../context.ts";
import { NodeView } from "../node_view.ts";
import { type GraphProto, list, type NodeProto } from "../decode.ts";
import type { Rule } from "../rule.ts";
import {
  bindOutputs,
  conditionOperand,
  type ConvertedSubgraph,
  convertSubgraph,
  type FormalInput,
  outerInput,
  outerReads,
  runtimeValues,
  type SubgraphOutput,
} from "../subgraph.ts";
import { ConversionLimitError, UnsupportedNodeError } from "../../errors.ts";
import { DriverError } from "../../../nnapi/errors.ts";
import { ConversionStopped } from "../limits.ts";
import { failMessage } from "../../../operations/fail.ts";
import { loop } from "./loop.ts";
import { tensorFromProto } from "../tensors.ts";

/**
 * Identity nodes that name the If's outputs after a branch's: appended to the branch's nodes,
 * they are converted with them (and continue with them when the graph forks after them).
 */
function outputNodes(node: NodeView, branch: GraphProto): NodeProto[] {
  const outputs = list(branch.output);
  if (outputs.length !== node.outputs.length) {
    throw new Error(`the branch has ${outputs.length} outputs, the If ${node.outputs.length}`);
  }
  return outputs.flatMap((output, i) =>
    node.outputs[i]
      ? [{
        name: `${node.name}/output ${i}`,
        opType: "Identity",
        input: [output.name ?? ""],
        output: [node.outputs[i]],
      } as NodeProto]
      : []
  );
}

/** The selected branch's nodes, converted into the enclosing graph. */
function inlineBranch(ctx: ConversionContext, node: NodeView, branch: GraphProto): void {
  for (const proto of list(branch.initializer)) {
    ctx.setConstant(proto.name ?? "", tensorFromProto(proto));
  }
  const protos = [...list(branch.node), ...outputNodes(node, branch)];
  ctx.convertNodes(protos.map((proto) => new NodeView(proto, node.index)));
}

/**
 * A branch followed by the rest of the enclosing graph, giving the enclosing graph's outputs:
 * what each branch becomes when the branches' values differ in rank (Silero VAD squeezes
 * its features only when their time extent is 1), so that what follows is converted for
 * the ranks each branch gives.
 */
function continued(
  node: NodeView,
  branch: GraphProto,
  rest: readonly NodeView[],
  outputs: readonly string[],
): GraphProto {
  return {
    node: [...list(branch.node), ...outputNodes(node, branch), ...rest.map((n) => n.proto)],
    initializer: list(branch.initializer),
    output: outputs.map((name) => ({ name })),
  } as GraphProto;
}

/** An outer operand's dimensions where the branches agree, 0 where they differ. */
function joinedDimensions(a: readonly number[], b: readonly number[]): number[] {
  return a.map((d, i) => d === b[i] ? d : 0);
}

/** Both branches converted as referenced subgraphs, and the outer values they read. */
interface ConvertedBranches {
  passed: string[];
  then: ConvertedSubgraph;
  otherwise: ConvertedSubgraph;
}

/**
 * Whether a branch's fault makes only the executions that take the branch fail. A node no
 * rule converts, a limit and a stopped conversion still refuse the import.
 */
function failsAtExecution(error: unknown): error is Error {
  if (
    error instanceof UnsupportedNodeError || error instanceof ConversionStopped ||
    error instanceof ConversionLimitError
  ) return false;
  if (error instanceof DriverError) {
    return error.status === "INVALID_ARGUMENT" && error.details.limit === undefined;
  }
  return error instanceof Error;
}

/**
 * A branch that fails with `message` when taken: a FAIL operation whose outputs stand for
 * `like`'s (the other branch's), so the If keeps their types and ranks.
 */
function failingBranch(
  ctx: ConversionContext,
  inputs: readonly FormalInput[],
  like: readonly SubgraphOutput[],
  message: string,
): ConvertedSubgraph {
  const builder = ctx.builder.subgraphBuilder();
  for (const input of inputs) builder.input(input.type, input.dimensions, input.quant);
  const code = failMessage(message);
  const text = builder.constant("TENSOR_INT32", [code.length], code);
  const outputs = like.map(({ operand }) =>
    builder.temporary(operand.type, operand.dimensions, {
      scale: operand.scale,
      zeroPoint: operand.zeroPoint,
    })
  );
  builder.operation("FAIL", [text], outputs);
  const converted = outputs.map((operand, j) => ({
    operand: builder.output(operand),
    elementType: like[j].elementType,
  }));
  return { index: builder.reference(), outputs: converted };
}

/**
 * Both branches as referenced subgraphs. Both must convert for the shapes the model allows,
 * though only one may ever run for the inputs a client sends (a squeeze taken only when an
 * extent is 1, Silero VAD's 8 kHz branch that cannot take a 16 kHz frame): a branch that
 * does not becomes one that fails when taken, with the reason, as onnxruntime fails then.
 */
function convertBranches(
  ctx: ConversionContext,
  node: NodeView,
  graphs: readonly [GraphProto, GraphProto],
  what = "",
): ConvertedBranches {
  const passed = runtimeValues(ctx, [
    ...new Set([...outerReads(graphs[0]), ...outerReads(graphs[1])]),
  ]);
  const inputs = passed.map((name) => outerInput(ctx, name));
  const names = ["then_branch", "else_branch"] as const;
  const attempts = graphs.map((graph) => {
    const mark = ctx.builder.referencedCount;
    try {
      return convertSubgraph(ctx, graph, inputs);
    } catch (error) {
      if (!failsAtExecution(error)) throw error;
      ctx.builder.dropReferenced(mark);
      return error;
    }
  });
  const faults = attempts.flatMap((attempt, b) =>
    attempt instanceof Error ? [`${names[b]}${what} does not convert: ${attempt.message}`] : []
  );
  if (faults.length === 2) {
    throw new Error(
      `the condition '${node.inputs[0]}' is known only at execution, and neither branch ` +
        `converts (${faults.join("; ")})`,
    );
  }
  const converted = attempts.find((a): a is ConvertedSubgraph => !(a instanceof Error))!;
  const [then, otherwise] = attempts.map((attempt, b) => {
    if (!(attempt instanceof Error)) return attempt;
    const taken = b === 0 ? "true" : "false";
    const message = `node '${node.name}' (If): ${faults[0]}; so an execution that takes it ` +
      `(the condition '${node.inputs[0]}' ${taken}) fails`;
    ctx.notes.push(
      `${message}. Other executions run. If the condition depends on an input your use ` +
        `fixes (a sample rate), fix its value at import (?value=input:v) to choose the branch then`,
    );
    return failingBranch(ctx, inputs, converted.outputs, message);
  });
  then.outputs.forEach((a, j) => {
    const b = otherwise.outputs[j].operand;
    if (a.operand.type !== b.type || a.operand.scale !== b.scale) {
      throw new Error(
        `output ${j} is ${a.operand.type} in then_branch and ${b.type} in else_branch`,
      );
    }
  });
  return { passed, then, otherwise };
}

/** Whether every output has one rank in both branches. */
function ranksAgree({ then, otherwise }: ConvertedBranches): boolean {
  return then.outputs.every((a, j) =>
    a.operand.dimensions.length === otherwise.outputs[j].operand.dimensions.length
  );
}

/** The IF operation over converted branches; its outputs are named `names`. */
function emitIf(
  ctx: ConversionContext,
  node: NodeView,
  names: readonly string[],
  { passed, then, otherwise }: ConvertedBranches,
): void {
  const outputs = bindOutputs(
    ctx,
    names,
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
}

const ifRule: Rule = {
  convert(node, ctx) {
    const graphs = [node.graph("then_branch"), node.graph("else_branch")] as const;
    const condition = ctx.constant(node.inputs[0]);
    if (condition) {
      if (condition.data.length !== 1) throw new Error("the condition is not a single value");
      return inlineBranch(ctx, node, condition.data[0] ? graphs[0] : graphs[1]);
    }
    const mark = ctx.builder.referencedCount;
    const branches = convertBranches(ctx, node, graphs);
    if (ranksAgree(branches)) return emitIf(ctx, node, node.outputs, branches);
    // The branches give values of different ranks, which no operand can hold: each branch
    // continues with the rest of the graph, converted for its ranks, up to the outputs.
    ctx.builder.dropReferenced(mark);
    const rest = ctx.takeRest();
    const outputs = ctx.graphOutputs;
    const tails = graphs.map((graph) => continued(node, graph, rest, outputs));
    const forked = convertBranches(
      ctx,
      node,
      [tails[0], tails[1]],
      ", with the rest of the graph after it (the branches' values differ in rank),",
    );
    if (!ranksAgree(forked)) {
      throw new Error(
        "the branches give values of different ranks, and so do the graph's outputs after them",
      );
    }
    emitIf(ctx, node, outputs, forked);
  },
};

export const CONTROL_FLOW_RULES: Record<string, Rule> = { If: ifRule, Loop: loop };
