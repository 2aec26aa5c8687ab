/**
 * What DEPTH_TO_SPACE and SPACE_TO_DEPTH share: [image, INT32 block size, optional BOOL NCHW
 * flag (HAL 1.2)] -> an image of the same type and quantization, rank 4 (TENSOR_FLOAT32,
 * TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2), and the kernel dispatch.
 */
import type { ImageDims } from "../../kernels/image_layout.ts";
import type { Numbers } from "../../kernels/typed_arrays.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { HalVersion } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "../operation.ts";
import { imageDims } from "./layout.ts";
import { checkInputType } from "./operand_types.ts";
import { checkSameQuantization } from "./quantization.ts";

/** Validates the signature; the NCHW flag or float16 need HAL 1.2. */
export function validateBlockRearrangement(signature: OperationSignature): HalVersion {
  checkArity(signature, [2, 3], 1);
  const input = signature.inputs[0];
  checkInputType(input, 0, ["TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16"]);
  const withLayout = signature.inputs.length === 3;
  checkTypes(
    signature,
    withLayout ? [input.type, "INT32", "BOOL"] : [input.type, "INT32"],
    [input.type],
  );
  checkRank(input, "input 0", (r) => r === 4, "4");
  const output = signature.outputs[0];
  checkRank(output, "output 0", (r) => r === 4, "4");
  if (input.type === "TENSOR_QUANT8_ASYMM") checkSameQuantization(input, output);
  return withLayout || input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
}

/** The block size, layout and NHWC input extents of a call at preparation. */
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

/** A DEPTH_TO_SPACE / SPACE_TO_DEPTH kernel (any element type, either layout). */
export type BlockKernel = (
  input: ArrayLike<number>,
  dims: ImageDims,
  blockSize: number,
  nchw: boolean,
  output: Numbers,
) => void;

/** Runs the kernel on an executing call's tensors. */
export function executeBlockRearrangement(
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  kernel: BlockKernel,
): void {
  const nchw = inputs.length === 3 && scalarOf(inputs[2]) !== 0;
  kernel(
    inputs[0].data!,
    imageDims(inputs[0].shape, nchw),
    scalarOf(inputs[1]),
    nchw,
    outputs[0].data!,
  );
}
