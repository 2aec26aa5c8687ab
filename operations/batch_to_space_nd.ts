/**
 * BATCH_TO_SPACE_ND: moves batch blocks back into height and width (NNAPI BatchToSpace.cpp;
 * no cropping). Inputs: 0 the image (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16
 * since HAL 1.2), 1 the block shape (TENSOR_INT32 [2], >= 1, their product dividing the
 * batches), 2 optional NCHW flag (BOOL, HAL 1.2). The output keeps the input's quantization.
 */
import { batchToSpace } from "../kernels/shape_transform.ts";
import type { ImageDims } from "../kernels/image_layout.ts";
import { imageShape, nhwcData, writeNhwc } from "./common/layout.ts";
import { blockGeometry, knownInputs, MOVED_TYPES, validateMoved } from "./common/shape_ops.ts";
import { check, checkArity, type OperationDefinition, type PrepareInput } from "./operation.ts";

/** The block and NHWC extents of a call. */
function geometry(
  inputs: readonly PrepareInput[],
): { nchw: boolean; input: ImageDims; block: [number, number]; output: ImageDims } {
  const { nchw, input, block: [bh, bw] } = blockGeometry(inputs, 2);
  check(
    input.batches % (bh * bw) === 0,
    `input batches ${input.batches} are not a multiple of the block size ${bh}x${bw}`,
  );
  return {
    nchw,
    input,
    block: [bh, bw],
    output: {
      batches: input.batches / (bh * bw),
      height: input.height * bh,
      width: input.width * bw,
      depth: input.depth,
    },
  };
}

/** BATCH_TO_SPACE_ND (HAL 1.1; the NCHW flag or float16 need HAL 1.2). */
export const batchToSpaceNd: OperationDefinition<"BATCH_TO_SPACE_ND"> = {
  type: "BATCH_TO_SPACE_ND",

  validate(signature) {
    checkArity(signature, [2, 3], 1);
    const withLayout = signature.inputs.length === 3;
    const input = validateMoved(signature, {
      supported: MOVED_TYPES,
      params: ["TENSOR_INT32", ...(withLayout ? ["BOOL" as const] : [])],
      ranks: [[0, "input 0", 4], [1, "block shape (input 1)", 1]],
    });
    return withLayout || input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_1";
  },

  prepare(inputs) {
    const { output, nchw } = geometry(inputs);
    return [imageShape(output, nchw)];
  },

  execute(inputs, outputs) {
    const g = geometry(knownInputs(inputs));
    const data = nhwcData(inputs[0], g.nchw);
    writeNhwc(outputs[0], g.nchw, (out) => batchToSpace(data, g.input, g.block, out));
  },
};
