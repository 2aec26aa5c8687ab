/**
 * FAIL, an nnserve extension: an execution that reaches it fails, with the message its input
 * holds (Unicode code points, a TENSOR_INT32 of rank 1). The ONNX importer puts it in an If
 * branch that cannot run on the shapes the model allows (a squeeze kept only when an extent
 * is 1, ranks no operation takes), so an execution that takes that branch fails with the
 * reason, as onnxruntime's would, and every other execution runs. Its outputs stand in for
 * the branch's: they never receive values.
 */
import { checkInputType, TENSOR_TYPES } from "./common/operand_types.ts";
import { check, checkRank, type OperationDefinition, OperationError } from "./operation.ts";

/** The message of a FAIL operation as its input holds it. */
export function failMessage(text: string): Int32Array {
  return Int32Array.from(text, (c) => c.codePointAt(0)!);
}

/** FAIL (an nnserve extension, HAL 1.3 operand types). */
export const fail: OperationDefinition<"FAIL"> = {
  type: "FAIL",

  validate(signature) {
    const { inputs, outputs } = signature;
    check(inputs.length === 1, `expected 1 input (the message), got ${inputs.length}`);
    checkInputType(inputs[0], 0, ["TENSOR_INT32"]);
    checkRank(inputs[0], "input 0", (r) => r === 1, "1");
    check(outputs.length >= 1, "expected at least 1 output, got 0");
    outputs.forEach((output, j) =>
      check(TENSOR_TYPES.includes(output.type), `output ${j} is ${output.type}, not a tensor`)
    );
    return "V1_3";
  },

  // Placeholders (unknown extents 1): the kernel fails before anything reads them.
  prepare: (_inputs, outputs) =>
    outputs.map((o) => o.shape.length > 0 ? o.shape.map((d) => d || 1) : [1]),

  execute(inputs) {
    throw new OperationError(String.fromCodePoint(...(inputs[0].data as Int32Array)));
  },

  cost: () => 0,
};
