/**
 * DEPTH_TO_SPACE: rearranges depth blocks of a 4-D image into spatial blocks (NNAPI
 * `depthToSpacePrepare` / `depthToSpaceGeneric`). Inputs: 0 the image (TENSOR_FLOAT32,
 * TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2), 1 block size s (INT32, >= 1, s^2
 * divides the depth), 2 optional NCHW flag (BOOL, HAL 1.2). Output [b, h*s, w*s, d/s^2] in
 * the input's layout, with the input's quantization.
 */
import {
  depthToSpace as depthToSpaceKernel,
  type ImageDims,
} from "../../kernels/shape_depth_space.ts";
import type { Tensor } from "../tensor.ts";
import type { HalVersion } from "../types.ts";
import type { OperationDefinition, OperationSignature, PrepareInput } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, scalarOf, scalarValue } from "./operation.ts";

/**
 * Validation shared by DEPTH_TO_SPACE and SPACE_TO_DEPTH: [image, INT32 block size,
 * optional BOOL NCHW flag] -> image of the same type and quantization, rank 4.
 */
export function validateBlockRearrangement(signature: OperationSignature): HalVersion {
  checkArity(signature, [2, 3], 1);
  const input = signature.inputs[0];
  check(
    input.type === "TENSOR_FLOAT32" || input.type === "TENSOR_QUANT8_ASYMM" ||
      input.type === "TENSOR_FLOAT16",
    `input 0 (operand ${input.index}) has unsupported type ${input.type}`,
  );
  const withLayout = signature.inputs.length === 3;
  checkTypes(
    signature,
    withLayout ? [input.type, "INT32", "BOOL"] : [input.type, "INT32"],
    [input.type],
  );
  checkRank(input, "input 0", (r) => r === 4, "4");
  const output = signature.outputs[0];
  checkRank(output, "output 0", (r) => r === 4, "4");
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    check(
      output.scale === input.scale && output.zeroPoint === input.zeroPoint,
      `output 0 (operand ${output.index}) must have the scale and zero point of input 0`,
    );
  }
  return withLayout || input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
}

/** The block size and layout of a DEPTH_TO_SPACE / SPACE_TO_DEPTH call at preparation. */
export function blockParameters(
  inputs: readonly PrepareInput[],
): { blockSize: number; nchw: boolean; dims: ImageDims } {
  const shape = inputs[0].shape;
  check(shape.length === 4, `input 0 has rank ${shape.length}, expected 4`);
  const blockSize = scalarValue(inputs[1], "block size (input 1)");
  check(blockSize >= 1, `block size (input 1) is ${blockSize}, expected at least 1`);
  const nchw = inputs.length === 3 && scalarValue(inputs[2], "layout (input 2)") !== 0;
  return { blockSize, nchw, dims: imageDims(shape, nchw) };
}

/** NHWC extents of a 4-D image shape in the given layout. */
export function imageDims(shape: readonly number[], nchw: boolean): ImageDims {
  return nchw
    ? { batches: shape[0], height: shape[2], width: shape[3], depth: shape[1] }
    : { batches: shape[0], height: shape[1], width: shape[2], depth: shape[3] };
}

/** A 4-D shape in the given layout from NHWC extents. */
export function layoutShape(dims: ImageDims, nchw: boolean): number[] {
  return nchw
    ? [dims.batches, dims.depth, dims.height, dims.width]
    : [dims.batches, dims.height, dims.width, dims.depth];
}

/** The layout flag of an executing DEPTH_TO_SPACE / SPACE_TO_DEPTH. */
export function isNchw(inputs: readonly Tensor[]): boolean {
  return inputs.length === 3 && scalarOf(inputs[2]) !== 0;
}

/** DEPTH_TO_SPACE (HAL 1.0; the NCHW flag or float16 need HAL 1.2). */
export const depthToSpace: OperationDefinition = {
  type: "DEPTH_TO_SPACE",

  validate: validateBlockRearrangement,

  prepare(inputs) {
    const { blockSize, nchw, dims } = blockParameters(inputs);
    const area = blockSize * blockSize;
    check(
      dims.depth % area === 0,
      `input depth ${dims.depth} is not a multiple of the squared block size ${area}`,
    );
    return [
      layoutShape({
        batches: dims.batches,
        height: dims.height * blockSize,
        width: dims.width * blockSize,
        depth: dims.depth / area,
      }, nchw),
    ];
  },

  execute(inputs, outputs) {
    const nchw = isNchw(inputs);
    depthToSpaceKernel(
      inputs[0].data!,
      imageDims(inputs[0].shape, nchw),
      scalarOf(inputs[1]),
      nchw,
      outputs[0].data!,
    );
  },
};
