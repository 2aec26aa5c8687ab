/**
 * SHAPE, an nnserve extension (NNAPI has no operation for it; TensorFlow Lite's SHAPE is
 * the same): the extents of the input tensor, as a TENSOR_INT32 of rank 1. It lets a model
 * compute shapes at execution — a RESHAPE target from extents given at execution, as ONNX's
 * `Shape` does — and, since it reads only the input's shape, executors work such shapes out
 * when they bind a plan for a set of input shapes (`model/shape_inference.ts`).
 */
import { checkInputType, TENSOR_TYPES } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  ValueNotYetKnown,
} from "./operation.ts";

/** SHAPE (an nnserve extension, HAL 1.3 operand types). */
export const shape: OperationDefinition<"SHAPE"> = {
  type: "SHAPE",
  readsOnlyShapes: true,

  validate(signature) {
    checkArity(signature, [1], 1);
    const input = signature.inputs[0];
    checkInputType(input, 0, TENSOR_TYPES);
    checkTypes(signature, [input.type], ["TENSOR_INT32"]);
    checkRank(signature.outputs[0], "output 0", (r) => r === 1, "1");
    return "V1_3";
  },

  prepare(inputs) {
    const rank = inputs[0].shape.length;
    // A tensor of rank 0 is one of unknown rank: its extents are not known yet.
    if (rank === 0) throw new ValueNotYetKnown();
    return [[rank]];
  },

  execute(inputs, outputs) {
    const extents = inputs[0].shape;
    const out = outputs[0].data as Int32Array;
    check(
      out.length === extents.length,
      `output 0 holds ${out.length} extents, not ${extents.length}`,
    );
    out.set(extents);
  },
};
