/**
 * Folds RELU, RELU1 and RELU6 into the operation that produces their input, as NNAPI's fused
 * activation code (convolutions, pooling, fully connected, element-wise arithmetic): frameworks
 * write the activation as a node of its own (ONNX `Relu`, `Clip(0, 6)`), and a separate pass
 * over the tensor costs as much memory traffic as the producer itself. Fused only where
 * nothing else sees the value before the activation: its one reader is the activation, it
 * is not a model output, the producer has no activation yet, and (quantized) both carry
 * the same scale and zero point.
 */
import type { OperandJson, OperationJson } from "../../driver/model/model_schema.ts";
import type { OperationType } from "../../nnapi/types.ts";
import type { ModelGraph } from "./model_graph.ts";

/** NNAPI's FuseCode of each activation operation. */
const FUSE_CODES: Partial<Record<OperationType, number>> = { RELU: 1, RELU1: 2, RELU6: 3 };

const isInt32 = (graph: ModelGraph, operand: number | undefined) =>
  operand !== undefined && graph.operands[operand]?.type === "INT32";

/**
 * The index of the fused-activation input of an operation, or undefined when it has none:
 * implicit and explicit padding forms differ in length, and the optional layout and
 * dilation inputs follow the activation (an explicit form has an INT32 where an implicit
 * one has its BOOL layout flag).
 */
export function activationInput(graph: ModelGraph, operation: OperationJson): number | undefined {
  const n = operation.inputs.length;
  const at = (i: number) => operation.inputs[i];
  switch (operation.type) {
    case "ADD":
    case "SUB":
    case "MUL":
    case "DIV":
      return n === 3 ? 2 : undefined;
    case "FULLY_CONNECTED":
      return n === 4 ? 3 : undefined;
    case "CONV_2D":
      return n >= 10 && isInt32(graph, at(7)) ? 9 : 6;
    case "DEPTHWISE_CONV_2D":
      return n >= 11 && isInt32(graph, at(8)) ? 10 : 7;
    case "TRANSPOSE_CONV_2D":
      return n === 11 ? 9 : 7;
    case "AVERAGE_POOL_2D":
    case "MAX_POOL_2D":
    case "L2_POOL_2D":
      return n >= 10 ? 9 : 6;
    default:
      return undefined;
  }
}

function sameQuantization(a: OperandJson, b: OperandJson): boolean {
  return a.type === b.type && (a.scale ?? 0) === (b.scale ?? 0) &&
    (a.zeroPoint ?? 0) === (b.zeroPoint ?? 0);
}

/** Fuses every activation it can; returns how many it fused. */
export function fuseActivations(graph: ModelGraph): number {
  let fused = 0;
  graph.operations.forEach((activation, index) => {
    const code = activation && FUSE_CODES[activation.type];
    if (!activation || code === undefined) return;
    const [x] = activation.inputs;
    const [y] = activation.outputs;
    if (!graph.soleReader(x)) return;
    const producer = graph.writer(x);
    if (!producer) return;
    const k = activationInput(graph, producer.operation);
    if (k === undefined || producer.operation.outputs.length !== 1) return;
    if (graph.constantValues(producer.operation.inputs[k])?.[0] !== 0) return;
    if (!sameQuantization(graph.operands[x], graph.operands[y])) return;
    graph.setInput(producer.index, k, graph.int32Scalar(code));
    graph.setOutput(producer.index, 0, y);
    graph.remove(index);
    fused++;
  });
  return fused;
}
