/**
 * A sequence grown by a Loop whose trip count is known only at execution (torch's
 * `out = []; while ...: out.append(t)`, then `torch.stack(out)` or `torch.cat(out)`): the
 * sequence cannot live at conversion, but its use allows a tensor. The carried sequence
 * becomes a scan output (WHILE accumulates it, one row per iteration), and each
 * ConcatFromSequence of the result becomes a Transpose (new_axis 1) or a Reshape (new_axis 0
 * along axis 0) of the stacked rows.
 */
import type { ConversionContext } from "../context.ts";
import { type GraphProto, list, type NodeProto, onnx } from "../decode.ts";
import { NodeView } from "../node_view.ts";
import { hostTensor } from "../tensors.ts";
import { normalizeAxis } from "./common.ts";

const GRAPH = onnx.AttributeProto.AttributeType.GRAPH;
const INTS = onnx.AttributeProto.AttributeType.INTS;

/** How a carried sequence grows: its position among the carried values, and what it appends. */
interface Growth {
  slot: number;
  insert: NodeProto;
  appended: string;
  stacks: NodeView[];
}

/**
 * The carried sequence this Loop grows by appending one tensor per iteration, starting
 * empty and read after the loop only by ConcatFromSequence; undefined if it is used
 * otherwise.
 */
export function grownSequence(
  node: NodeView,
  ctx: ConversionContext,
  body: GraphProto,
): Growth | undefined {
  const initial = node.inputs.slice(2);
  const slots = initial.flatMap((name, j) => ctx.isSequence(name) ? [j] : []);
  if (slots.length !== 1) return undefined;
  const [slot] = slots;
  if (ctx.sequence(initial[slot]).length !== 0) return undefined;
  const carriedIn = list(body.input)[slot + 2]?.name ?? "";
  const carriedOut = list(body.output)[slot + 1]?.name ?? "";
  const readers = list(body.node).filter((n) =>
    list(n.input).includes(carriedIn) || list(n.input).includes(carriedOut)
  );
  const [insert] = readers;
  const appends = readers.length === 1 && insert.opType === "SequenceInsert" &&
    list(insert.input).length === 2 && list(insert.input)[0] === carriedIn &&
    list(insert.output)[0] === carriedOut;
  if (!appends) return undefined;
  const out = node.outputs[slot];
  const stacks = out ? ctx.consumers(out) : [];
  const onlyStacked = stacks.length === ctx.uses(out) &&
    stacks.every((c) => c.opType === "ConcatFromSequence");
  if (!onlyStacked) return undefined;
  return { slot, insert, appended: list(insert.input)[1], stacks: [...stacks] };
}

/**
 * Converts the Loop with the grown sequence as a scan output (through `convertLoop`), then
 * each ConcatFromSequence of it from the stacked rows.
 */
export function convertGrown(
  node: NodeView,
  ctx: ConversionContext,
  body: GraphProto,
  growth: Growth,
  convertLoop: (node: NodeView) => void,
): void {
  const { slot, insert, appended } = growth;
  const carriedCount = node.inputs.length - 2;
  const stacked = `${node.name || node.outputs[0]}#rows`;
  const bodyInputs = list(body.input).filter((_, i) => i !== slot + 2);
  const bodyOutputs = list(body.output);
  const newBody: GraphProto = {
    ...body,
    node: list(body.node).filter((n) => n !== insert),
    input: bodyInputs,
    output: [
      ...bodyOutputs.slice(0, carriedCount + 1).filter((_, i) => i !== slot + 1),
      ...bodyOutputs.slice(carriedCount + 1),
      { name: appended },
    ],
  } as GraphProto;
  const outputs = node.outputs;
  const rewritten = new NodeView({
    name: node.name,
    opType: "Loop",
    input: node.inputs.filter((_, i) => i !== slot + 2),
    output: [
      ...outputs.slice(0, carriedCount).filter((_, j) => j !== slot),
      ...outputs.slice(carriedCount),
      stacked,
    ],
    attribute: [{ name: "body", type: GRAPH, g: newBody }],
  }, node.index);
  convertLoop(rewritten);
  // The sequence's name holds its rows, which only the ConcatFromSequence nodes below read.
  if (node.outputs[slot]) ctx.alias(node.outputs[slot], stacked);
  const rows = ctx.dims(stacked);
  for (const stack of growth.stacks) {
    ctx.absorb(stack);
    const newAxis = stack.int("new_axis", 0) === 1;
    const itemRank = rows.length - 1;
    const axis = normalizeAxis(stack.int("axis"), itemRank + (newAxis ? 1 : 0));
    const target = stack.outputs[0];
    let proto: NodeProto;
    if (newAxis) {
      // The rows' axis moved to where torch.stack puts it.
      const perm = rows.map((_, i) => i).slice(1);
      perm.splice(axis, 0, 0);
      proto = {
        name: `${stack.name}#moved`,
        opType: "Transpose",
        input: [stacked],
        output: [target],
        attribute: [{ name: "perm", type: INTS, ints: perm }],
      };
    } else if (axis === 0 && rows.slice(2).every((d) => d !== 0)) {
      // torch.cat along the first axis: the rows and the first axis merged.
      const shape = `${stack.name}#shape`;
      ctx.setConstant(shape, hostTensor("int64", [itemRank], [-1, ...rows.slice(2)]));
      proto = {
        name: `${stack.name}#merged`,
        opType: "Reshape",
        input: [stacked, shape],
        output: [target],
      };
    } else {
      throw new Error(
        `ConcatFromSequence '${stack.name}' of the sequence a Loop grows at execution joins ` +
          `along axis ${axis} without a new axis, which is not supported (torch.stack, or ` +
          "torch.cat along the first axis of tensors whose other extents are known, are)",
      );
    }
    ctx.convertNodes([new NodeView(proto, node.index)]);
  }
}
