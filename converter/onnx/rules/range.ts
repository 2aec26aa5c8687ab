/**
 * Range, folded at conversion where its start, limit and delta are constants (position
 * tables of attention models once the shapes they come from are fixed); else RANGE, nnserve's
 * extension operation, with the values computed at execution (a sequence's length).
 */
import type { Rule } from "../rule.ts";
import { allocateHost } from "../tensors.ts";
import { specOf } from "./common.ts";

const range: Rule = {
  fold(_node, [start, limit, delta]) {
    const [first, end, step] = [start!, limit!, delta!].map((t) => {
      if (t.data.length !== 1) throw new Error(`Range takes scalars; got shape [${t.dims}]`);
      return t.data[0];
    });
    if (step === 0) throw new Error("Range's delta is 0");
    const count = Math.max(Math.ceil((end - first) / step), 0);
    const out = allocateHost(start!.type, [count]);
    // onnxruntime accumulates in the element type: value += delta.
    const float32 = start!.type === "float32";
    let value = first;
    for (let i = 0; i < count; i++) {
      out.data[i] = value;
      value = float32 ? Math.fround(value + step) : value + step;
    }
    return [out];
  },
  convert(node, ctx) {
    const type = ctx.elementType(node.inputs[0]);
    if (type !== "int64" && type !== "int32" && type !== "float32") {
      throw new Error(`Range of ${type} values needs constant start, limit and delta`);
    }
    const spec = specOf(type === "float32" ? "float32" : type);
    const inputs = node.inputs.map((name) => ctx.operand(name));
    ctx.emitAs(node.outputs[0], "RANGE", inputs, { ...spec, dims: [0] });
  },
};

export const RANGE_RULES: Record<string, Rule> = { Range: range };
