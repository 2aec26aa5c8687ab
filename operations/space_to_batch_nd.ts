/**
 * SPACE_TO_BATCH_ND: pads the height and width of a 4-D image and moves spatial blocks into
 * the batch dimension (NNAPI SpaceToBatch.cpp). Inputs: 0 the image (TENSOR_FLOAT32,
 * TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2), 1 the block shape (TENSOR_INT32 [2],
 * >= 1), 2 the paddings (TENSOR_INT32 [2, 2]: top, bottom, left, right; >= 0, padded extents
 * divisible by the block), 3 optional NCHW flag (BOOL, HAL 1.2). Quant8 pads with the zero
 * point; the output keeps the input's quantization.
 */
import { spaceToBatch } from "../kernels/shape_transform.ts";
import type { ImageDims } from "../kernels/image_layout.ts";
import { imageShape, nhwcData, writeNhwc } from "./common/layout.ts";
import { blockGeometry, knownInputs, MOVED_TYPES, validateMoved } from "./common/shape_ops.ts";
import {
  check,
  checkArity,
  type OperationDefinition,
  type PrepareInput,
  tensorValue,
} from "./operation.ts";
import { isQuant8Asymm } from "./common/signed.ts";

interface SpaceToBatchGeometry {
  nchw: boolean;
  input: ImageDims;
  block: [number, number];
  padding: [number, number, number, number];
  output: ImageDims;
}

/** The block, paddings and NHWC extents of a call. */
function geometry(inputs: readonly PrepareInput[]): SpaceToBatchGeometry {
  const { nchw, input, block: [bh, bw] } = blockGeometry(inputs, 3);
  const pads = inputs[2];
  check(
    pads.shape.length === 2 && pads.shape[0] === 2 && pads.shape[1] === 2,
    `paddings (input 2) has shape [${pads.shape.join(",")}], expected [2,2]`,
  );
  const [top, bottom, left, right] = Array.from(tensorValue(pads, "paddings (input 2)"), Number);
  check(
    top >= 0 && bottom >= 0 && left >= 0 && right >= 0,
    `paddings (input 2) [${[top, bottom, left, right].join(",")}] has a negative entry`,
  );
  const height = input.height + top + bottom;
  const width = input.width + left + right;
  check(
    height % bh === 0 && width % bw === 0,
    `padded height ${height} and width ${width} are not multiples of the block [${bh},${bw}]`,
  );
  return {
    nchw,
    input,
    block: [bh, bw],
    padding: [top, bottom, left, right],
    output: {
      batches: input.batches * bh * bw,
      height: height / bh,
      width: width / bw,
      depth: input.depth,
    },
  };
}

/** SPACE_TO_BATCH_ND (HAL 1.1; the NCHW flag, float16 or a nonzero quant8 zero point: 1.2). */
export const spaceToBatchNd: OperationDefinition<"SPACE_TO_BATCH_ND"> = {
  type: "SPACE_TO_BATCH_ND",

  validate(signature) {
    checkArity(signature, [3, 4], 1);
    const withLayout = signature.inputs.length === 4;
    const input = validateMoved(signature, {
      supported: MOVED_TYPES,
      params: ["TENSOR_INT32", "TENSOR_INT32", ...(withLayout ? ["BOOL" as const] : [])],
      ranks: [[0, "input 0", 4], [1, "block shape (input 1)", 1], [2, "paddings (input 2)", 2]],
    });
    const quantOffset = input.type === "TENSOR_QUANT8_ASYMM" && input.zeroPoint !== 0;
    return withLayout || quantOffset || input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_1";
  },

  prepare(inputs) {
    const { output, nchw } = geometry(inputs);
    return [imageShape(output, nchw)];
  },

  execute(inputs, outputs) {
    const g = geometry(knownInputs(inputs));
    const output = outputs[0];
    const value = isQuant8Asymm(output.type) ? output.zeroPoint : 0;
    const data = nhwcData(inputs[0], g.nchw);
    writeNhwc(output, g.nchw, (out) => spaceToBatch(data, g.input, g.block, g.padding, value, out));
  },
};
