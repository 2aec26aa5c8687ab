/**
 * Range, folded at conversion: its start, limit and delta are constants once the shapes
 * they come from are fixed (position tables of attention models). NNAPI has no operation
 * whose output length depends on input values.
 */
import type { Rule } from "../rule.ts";
import { allocateHost } from "../tensors.ts";

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
  convert() {
    throw new Error(
      "Range needs constant start, limit and delta (fix the input shapes at import, ?shape=)",
    );
  },
};

export const RANGE_RULES: Record<string, Rule> = { Range: range };
