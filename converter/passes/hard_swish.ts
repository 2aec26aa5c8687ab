/**
 * Recognizes hard swish written out element by element, `x * relu6(x + 3) / 6` (ONNX
 * exports of PaddlePaddle and older PyTorch: Add, Clip, Mul, Div; after activation fusion an
 * ADD with RELU6, a MUL and a DIV), and replaces the three passes over the tensor with one
 * HARD_SWISH, whose float kernel rounds the same steps the same way (`x + 3`, the product,
 * the quotient). Only where nothing else reads the intermediate values and the DIV has no
 * activation of its own.
 */
import type { OperationJson } from "../../driver/model/model_schema.ts";
import type { ModelGraph } from "./model_graph.ts";

const RELU6 = 3;

/** The one-value constant an operand holds, or undefined. */
function scalarConstant(graph: ModelGraph, operand: number): number | undefined {
  const values = graph.operands[operand].type === "TENSOR_FLOAT32"
    ? graph.constantValues(operand)
    : undefined;
  return values?.length === 1 ? values[0] : undefined;
}

/** `op(a, b, activation)`'s inputs other than `operand`, with its activation code. */
function binary(graph: ModelGraph, op: OperationJson, type: string) {
  if (op.type !== type || op.inputs.length !== 3) return undefined;
  const activation = graph.constantValues(op.inputs[2])?.[0];
  return activation === undefined ? undefined : { a: op.inputs[0], b: op.inputs[1], activation };
}

/** Replaces every hard swish it finds; returns how many. */
export function fuseHardSwish(graph: ModelGraph): number {
  let fused = 0;
  graph.operations.forEach((add, addIndex) => {
    const plus = add && binary(graph, add, "ADD");
    if (!add || !plus || plus.activation !== RELU6) return;
    // x + 3 (either order), x float32 of the output's shape.
    const x = scalarConstant(graph, plus.b) === 3
      ? plus.a
      : scalarConstant(graph, plus.a) === 3
      ? plus.b
      : undefined;
    const [gate] = add.outputs;
    if (x === undefined || graph.operands[x].type !== "TENSOR_FLOAT32") return;
    if (graph.operands[x].dimensions.join() !== graph.operands[gate].dimensions.join()) return;
    const mul = graph.soleReader(gate);
    const times = mul && binary(graph, mul.operation, "MUL");
    if (!mul || !times || times.activation !== 0) return;
    if (!((times.a === x && times.b === gate) || (times.a === gate && times.b === x))) return;
    const [product] = mul.operation.outputs;
    const div = graph.soleReader(product);
    const over = div && binary(graph, div.operation, "DIV");
    if (!div || !over || over.activation !== 0 || over.a !== product) return;
    if (scalarConstant(graph, over.b) !== 6) return;
    graph.replace(div.index, {
      type: "HARD_SWISH",
      inputs: [x],
      outputs: div.operation.outputs,
    });
    graph.remove(addIndex);
    graph.remove(mul.index);
    fused++;
  });
  return fused;
}
