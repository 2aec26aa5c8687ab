/**
 * Trilu (a causal attention mask's triangle): the ONNX operators it stands for, so that they
 * fold where the extents are known at conversion and run at execution where they are not:
 * row and column numbers by Range over the last two extents, their difference compared with
 * k, and Where keeping `x` on the kept side, 0 elsewhere.
 */
import { type NodeProto, onnx } from "../decode.ts";
import { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import { hostTensor } from "../tensors.ts";

const INT = onnx.AttributeProto.AttributeType.INT;

const trilu: Rule = {
  convert(node, ctx) {
    const [x, k] = node.inputs;
    const rank = ctx.dims(x).length;
    if (rank < 2) throw new Error(`Trilu takes rank 2 or more; the input has rank ${rank}`);
    const upper = node.int("upper", 1) === 1;
    const base = node.name || node.outputs[0];
    const name = (what: string) => `${base}#${what}`;
    const constant = (what: string, type: "int64" | "float32", dims: number[], v: number[]) => {
      ctx.setConstant(name(what), hostTensor(type, dims, v));
      return name(what);
    };
    const zeroOf = ctx.elementType(x) === "float32" || ctx.elementType(x) === "float16"
      ? constant("zero", "float32", [], [0])
      : constant("zero", "int64", [], [0]);
    const node_ = (opType: string, input: string[], output: string, axis?: number): NodeProto => ({
      name: name(output),
      opType,
      input,
      output: [name(output)],
      ...(axis === undefined ? {} : { attribute: [{ name: "axis", type: INT, i: axis }] }),
    });
    const protos: NodeProto[] = [
      node_("Shape", [x], "shape"),
      node_("Gather", [name("shape"), constant("row axis", "int64", [], [rank - 2])], "rows", 0),
      node_("Gather", [name("shape"), constant("column axis", "int64", [], [rank - 1])], "cols", 0),
      node_("Range", [
        constant("from", "int64", [], [0]),
        name("rows"),
        constant("step", "int64", [], [1]),
      ], "row"),
      node_("Range", [name("from"), name("cols"), name("step")], "col"),
      node_("Unsqueeze", [name("row"), constant("last", "int64", [1], [1])], "row column"),
      node_("Sub", [name("col"), name("row column")], "offset"),
      node_(upper ? "GreaterOrEqual" : "LessOrEqual", [
        name("offset"),
        k || constant("k", "int64", [], [0]),
      ], "kept"),
      node_("CastLike", [zeroOf, x], "zeros"),
      {
        name: name("where"),
        opType: "Where",
        input: [name("kept"), x, name("zeros")],
        output: [node.outputs[0]],
      },
    ];
    ctx.convertNodes(protos.map((proto) => new NodeView(proto, node.index)));
  },
};

export const TRILU_RULES: Record<string, Rule> = { Trilu: trilu };
