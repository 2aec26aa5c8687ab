/**
 * The validation, shape inference and dispatch the pooling operations (AVERAGE_POOL_2D,
 * MAX_POOL_2D, L2_POOL_2D) share (Android 10 `pooling::validate` / `prepare` /
 * `PoolingParam`): 10 inputs (explicit padding) or 7 (implicit SAME/VALID), plus the NCHW
 * flag for 11/8 (HAL 1.2); quantized outputs keep the input's quantization.
 */
import {
  type ActivationRange,
  activationRangeFloat,
  activationRangeQuantized,
} from "../../kernels/fixed_point.ts";
import type { Pool2dGeometry } from "../../kernels/pool_2d.ts";
import { elementCount, type Tensor, type TensorData, type TensorInfo } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type OperationSignature,
  type PrepareInput,
  scalarOf,
  scalarValue,
} from "../operation.ts";
import { layoutShape, nhwcData, nhwcDims, writeNhwc } from "./layout.ts";
import { checkInputType } from "./operand_types.ts";
import {
  checkPaddingCode,
  checkWindow,
  explicitPadding2d,
  outputSize2d,
  type Padding2d,
} from "./padding.ts";
import { checkSameQuantization } from "./quantization.ts";
import { checkFusedActivation, knownScalar } from "./scalars.ts";

/** The resolved parameters of one pooling call (AVERAGE/MAX/L2_POOL_2D). */
interface PoolParams {
  padding: Padding2d;
  strideWidth: number;
  strideHeight: number;
  filterWidth: number;
  filterHeight: number;
  activation: number;
  nchw: boolean;
}

/**
 * Reads the scalar parameters of a pooling operation (Android 10 `PoolingParam`): 10/11
 * inputs = explicit padding, 7/8 = implicit scheme; the last of 8/11 is the NCHW flag.
 */
export function poolParams(
  count: number,
  scalar: (index: number) => number,
  inputShape: readonly number[],
): PoolParams {
  const explicit = count >= 10;
  const nchw = (count === 8 || count === 11) && scalar(count - 1) !== 0;
  const [, inHeight, inWidth] = nhwcDims(inputShape, nchw);
  const first = explicit ? 5 : 2;
  const strideWidth = scalar(first);
  const strideHeight = scalar(first + 1);
  const filterWidth = scalar(first + 2);
  const filterHeight = scalar(first + 3);
  const activation = scalar(first + 4);
  check(
    filterWidth > 0 && filterHeight > 0,
    `filter size (${filterWidth}, ${filterHeight}) must be positive`,
  );
  let padding: Padding2d;
  if (explicit) {
    padding = { left: scalar(1), right: scalar(2), top: scalar(3), bottom: scalar(4) };
  } else {
    const scheme = scalar(1);
    checkPaddingCode(scheme, "input 1 (padding scheme)");
    padding = explicitPadding2d(
      scheme,
      inWidth,
      inHeight,
      strideWidth,
      strideHeight,
      filterWidth,
      filterHeight,
    );
  }
  checkFusedActivation(activation, `input ${first + 4}`);
  checkWindow(padding, strideWidth, strideHeight, filterWidth, filterHeight);
  return { padding, strideWidth, strideHeight, filterWidth, filterHeight, activation, nchw };
}

/** Output shape of a pooling operation (Android 10 `pooling::prepare`). */
function poolOutputShape(
  inputShape: readonly number[],
  p: PoolParams,
): number[] {
  check(inputShape.length === 4, `input 0 has rank ${inputShape.length}, expected 4`);
  const [batches, inHeight, inWidth, channels] = nhwcDims(inputShape, p.nchw);
  check(
    inHeight > 0 && inWidth > 0 && channels > 0,
    `only the batch dimension may be 0 (input [${inputShape}])`,
  );
  const [outHeight, outWidth] = outputSize2d(
    inHeight,
    inWidth,
    p.filterHeight,
    p.filterWidth,
    p.strideHeight,
    p.strideWidth,
    p.padding,
  );
  return layoutShape(batches, outHeight, outWidth, channels, p.nchw);
}

/**
 * Validates a pooling signature (Android 10 `pooling::validate`): 7/10 inputs (HAL 1.0) or
 * 8/11 with the NCHW flag (HAL 1.2); `inputTypes` lists the supported input types
 * (float16 needs HAL 1.2). Quantized outputs must keep the input's scale and zero point.
 */
function validatePool(
  signature: OperationSignature,
  inputTypes: readonly OperandType[],
): HalVersion {
  checkArity(signature, [7, 8, 10, 11], 1);
  const input = signature.inputs[0];
  checkInputType(input, 0, inputTypes);
  const count = signature.inputs.length;
  const layout = count === 8 || count === 11;
  const expected: OperandType[] = [input.type];
  for (let i = 1; i < count; i++) expected.push(layout && i === count - 1 ? "BOOL" : "INT32");
  checkTypes(signature, expected, [input.type]);
  checkRank(input, "input 0", (r) => r === 4, "4");
  if (input.type === "TENSOR_QUANT8_ASYMM") checkSameQuantization(input, signature.outputs[0]);
  return layout || input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
}

/** Infers a pooling output shape. */
function preparePool(
  inputs: readonly PrepareInput[],
  _outputs: readonly TensorInfo[],
): number[][] {
  const p = poolParams(
    inputs.length,
    (i) => scalarValue(inputs[i], `input ${i}`),
    inputs[0].shape,
  );
  return [poolOutputShape(inputs[0].shape, p)];
}

/**
 * Taps of a pooling call: every output reads its window, clipped to the input. The window
 * size and layout are constants in any plan with known shapes; were they not, the whole
 * image bounds the window.
 */
function poolCost(inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]): number {
  const count = inputs.length;
  const first = count >= 10 ? 5 : 2;
  const nchw = (count === 8 || count === 11) && (knownScalar(inputs[count - 1]) ?? 0) !== 0;
  const [, inHeight, inWidth] = nhwcDims(inputs[0].shape, nchw);
  const width = Math.min(knownScalar(inputs[first + 2]) ?? inWidth, inWidth);
  const height = Math.min(knownScalar(inputs[first + 3]) ?? inHeight, inHeight);
  return elementCount(outputs[0].shape) * Math.max(1, width) * Math.max(1, height);
}

/** A pooling kernel on NHWC data. */
export type PoolKernel = (
  g: Pool2dGeometry,
  input: TensorData,
  activation: ActivationRange,
  output: TensorData,
) => void;

/**
 * Runs a pooling kernel: resolves the parameters, the activation range (quantized with the
 * output's scale and zero point for quant8) and the layout.
 */
function executePool(
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  kernel: PoolKernel,
): void {
  const input = inputs[0];
  const output = outputs[0];
  if (elementCount(output.shape) === 0) return;
  const p = poolParams(inputs.length, (i) => scalarOf(inputs[i]), input.shape);
  const [batches, inHeight, inWidth, depth] = nhwcDims(input.shape, p.nchw);
  const [, outHeight, outWidth] = nhwcDims(output.shape, p.nchw);
  const geometry: Pool2dGeometry = {
    batches,
    inHeight,
    inWidth,
    depth,
    outHeight,
    outWidth,
    filterHeight: p.filterHeight,
    filterWidth: p.filterWidth,
    strideHeight: p.strideHeight,
    strideWidth: p.strideWidth,
    padTop: p.padding.top,
    padLeft: p.padding.left,
  };
  const range = output.type === "TENSOR_QUANT8_ASYMM"
    ? activationRangeQuantized(p.activation, output.scale, output.zeroPoint)
    : activationRangeFloat(p.activation);
  const inData = nhwcData(input, p.nchw);
  writeNhwc(output, p.nchw, (out) => kernel(geometry, inData, range, out));
}

/**
 * Builds the definition of a pooling operation: `inputTypes` lists the supported input
 * types (float16 needs HAL 1.2), `kernel` picks the NHWC kernel for an input type.
 */
export function poolOperation<T extends OperationType>(
  type: T,
  options: {
    inputTypes: readonly OperandType[];
    kernel: (inputType: OperandType) => PoolKernel;
  },
): OperationDefinition<T> {
  return {
    type,
    validate: (signature) => validatePool(signature, options.inputTypes),
    prepare: preparePool,
    cost: poolCost,
    execute(inputs, outputs) {
      executePool(inputs, outputs, options.kernel(inputs[0].type));
    },
  };
}
