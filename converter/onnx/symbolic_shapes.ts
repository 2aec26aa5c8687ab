/**
 * What the converter knows of extents given only at execution, beyond "unknown": ONNX's
 * scalars (carried as [1], kept rank 0 for the rules), and symbolic extents by name (ONNX's
 * `dim_param`), carried through element-wise operations, so that two values of one symbol
 * are known to be the same shape (a Where of x and sigmoid(x) needs no broadcasting at
 * execution). An extent known only at execution without a name is its own symbol.
 */
import type { ConversionContext } from "./context.ts";
import type { NodeView } from "./node_view.ts";

/** A shape as symbols: a number where known, a name where known only at execution. */
export type SymbolicShape = readonly (number | string)[];

/** Op types whose output has the broadcast shape of their inputs. */
const ELEMENTWISE = new Set([
  "Add",
  "Sub",
  "Mul",
  "Div",
  "Pow",
  "Max",
  "Min",
  "Mod",
  "Sum",
  "Mean",
  "Neg",
  "Abs",
  "Cast",
  "CastLike",
  "Equal",
  "Greater",
  "Less",
  "GreaterOrEqual",
  "LessOrEqual",
  "And",
  "Or",
  "Not",
  "Xor",
  "Where",
  "Sqrt",
  "Exp",
  "Log",
  "Floor",
  "Ceil",
  "Round",
  "Reciprocal",
  "Sigmoid",
  "Relu",
  "Tanh",
  "Sin",
  "Cos",
  "Erf",
  "Clip",
  "Sign",
  "LeakyRelu",
  "Elu",
  "HardSigmoid",
  "HardSwish",
  "Softmax",
  "LogSoftmax",
  "PRelu",
]);

/** The inputs whose shapes make an element-wise node's output shape. */
function shapedInputs(node: NodeView): string[] {
  if (node.opType === "CastLike" || node.opType === "Clip" || node.opType === "Softmax") {
    return node.inputs.slice(0, 1);
  }
  return node.inputs.filter((name) => name !== "");
}

/**
 * The broadcast of symbolic shapes: a known extent above 1 wins; one symbol beside 1s stays
 * (whatever it is at execution, the result is it); different symbols give none (undefined).
 */
export function broadcastSymbols(shapes: readonly SymbolicShape[]): SymbolicShape | undefined {
  const rank = Math.max(...shapes.map((s) => s.length));
  const out: (number | string)[] = [];
  for (let i = 0; i < rank; i++) {
    const at = shapes.map((s) => s[i - rank + s.length] ?? 1).filter((d) => d !== 1);
    const known = at.find((d) => typeof d === "number");
    if (known !== undefined) out.push(known);
    else if (at.length === 0) out.push(1);
    else if (at.every((d) => d === at[0])) out.push(at[0]);
    else return undefined;
  }
  return out;
}

/** Whether the values' shapes are the same at every execution. */
export function sameShapes(ctx: ConversionContext, names: readonly string[]): boolean {
  const [first, ...rest] = names.map((name) => ctx.symbols(name));
  return rest.every((s) => s.length === first.length && s.every((d, i) => d === first[i]));
}

/**
 * After an element-wise node: its outputs of ONNX scalars are scalars, and its outputs keep
 * the symbols of their inputs' broadcast.
 */
export function keepShapes(ctx: ConversionContext, node: NodeView): void {
  if (!ELEMENTWISE.has(node.opType)) return;
  const inputs = shapedInputs(node);
  const outputs = node.outputs.filter((name) => name !== "" && ctx.has(name));
  if (inputs.every((name) => ctx.dims(name).length === 0)) {
    for (const name of outputs) {
      const value = ctx.value(name);
      if (value.kind === "operand" && value.operand.dimensions.join() === "1") {
        ctx.markScalar(name);
      }
    }
    return;
  }
  const symbols = broadcastSymbols(inputs.map((name) => ctx.symbols(name)));
  if (!symbols) return;
  for (const name of outputs) {
    const dims = ctx.dims(name);
    const fits = dims.length === symbols.length &&
      dims.every((d, i) => d === 0 ? typeof symbols[i] === "string" : d === symbols[i]);
    if (fits) ctx.setSymbols(name, symbols);
  }
}
