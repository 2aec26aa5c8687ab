/**
 * What MEAN and the REDUCE_* family share: an input of rank 1 to 4, a 1-D TENSOR_INT32 of
 * axes (negative ones count from the end, duplicates count once), a keep-dims flag, and an
 * output with the reduced axes removed (or kept as 1). Reducing every axis without keeping
 * them gives shape [1], as NNAPI's `Reduce.cpp` does (also for MEAN, where Android's
 * `meanPrepare` would give a rank-0 tensor).
 */
import { type Fold, reduceGeneric, type ReductionPlan } from "../../kernels/reduction_kernels.ts";
import type { Tensor } from "../../nnapi/tensor.ts";
import type { HalVersion, OperandType, OperationType } from "../../nnapi/types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type OperationSignature,
  type PrepareInput,
  scalarValue,
  tensorValue,
} from "../operation.ts";
import { resolveAxis } from "./axis.ts";
import { versionOfInputType } from "./operand_types.ts";
import { checkSameQuantization } from "./quantization.ts";

/** Operand positions of MEAN and REDUCE_*. */
export const REDUCTION = { input: 0, axes: 1, keepDims: 2 } as const;

/** Which axes of a rank-`rank` input the axes values reduce; throws on an axis out of range. */
export function reducedAxes(axes: ArrayLike<number>, rank: number): boolean[] {
  const reduced = new Array<boolean>(rank).fill(false);
  for (let i = 0; i < axes.length; i++) {
    reduced[resolveAxis(Number(axes[i]), rank, `input 1 element ${i}`)] = true;
  }
  return reduced;
}

/** The output shape: reduced axes dropped (or 1 with `keepDims`); [1] if none is left. */
export function reducedShape(
  shape: readonly number[],
  reduced: readonly boolean[],
  keepDims: boolean,
): number[] {
  const out: number[] = [];
  shape.forEach((d, i) => {
    if (!reduced[i]) out.push(d);
    else if (keepDims) out.push(1);
  });
  return out.length === 0 ? [1] : out;
}

/**
 * Checks arity, types (`keepDimsType`: INT32 for MEAN, BOOL for REDUCE_*), the input rank
 * (at most 4), the axes rank (1) and, for quant8, that the output keeps the input's
 * quantization (NNAPI copies it into the output shape). Returns the input type's version.
 */
export function validateReduction(
  signature: OperationSignature,
  versions: Partial<Record<OperandType, HalVersion>>,
  keepDimsType: "INT32" | "BOOL",
): HalVersion {
  checkArity(signature, [3], 1);
  const input = signature.inputs[REDUCTION.input];
  const version = versionOfInputType(input, versions);
  checkTypes(signature, [input.type, "TENSOR_INT32", keepDimsType], [input.type]);
  checkRank(input, "input 0", (r) => r <= 4, "at most 4");
  checkRank(signature.inputs[REDUCTION.axes], "input 1", (r) => r === 1, "1");
  const axes = signature.inputs[REDUCTION.axes];
  if (axes.value && input.dimensions.length > 0) {
    reducedAxes(axes.value, input.dimensions.length);
  }
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    checkSameQuantization(input, signature.outputs[0]);
  }
  return version;
}

/** Shape inference of a reduction (needs the axes and keep-dims values). */
export function prepareReduction(inputs: readonly PrepareInput[]): number[][] {
  const shape = inputs[REDUCTION.input].shape;
  check(
    shape.length >= 1 && shape.length <= 4,
    `input 0 has rank ${shape.length}, expected 1 to 4`,
  );
  check(
    inputs[REDUCTION.axes].shape.length === 1,
    `input 1 has rank ${inputs[REDUCTION.axes].shape.length}, expected 1`,
  );
  const axes = tensorValue(inputs[REDUCTION.axes], "input 1");
  const keepDims = scalarValue(inputs[REDUCTION.keepDims], "input 2") > 0;
  return [reducedShape(shape, reducedAxes(axes, shape.length), keepDims)];
}

/** The reduction plan of an executing call. */
export function executionPlan(inputs: readonly Tensor[]): ReductionPlan {
  const shape = inputs[REDUCTION.input].shape;
  return { shape, reduced: reducedAxes(inputs[REDUCTION.axes].data!, shape.length) };
}

/** One REDUCE_* operation: the types it takes and its fold for each of them. */
export interface ReduceSpec<T extends OperationType> {
  type: T;
  /** The HAL version of each supported input type. */
  versions: Partial<Record<OperandType, HalVersion>>;
  /** The fold's start value for an input type (its identity). */
  init: (type: OperandType) => number;
  fold: Fold;
}

/** The largest finite value of a reduced element type (float16, float32, uint8). */
export function typeMax(type: OperandType): number {
  if (type === "TENSOR_FLOAT16") return 65504;
  if (type === "TENSOR_QUANT8_ASYMM") return 255;
  return 3.4028234663852886e38;
}

/** The lowest finite value of a reduced element type (float16, float32, uint8). */
export function typeLowest(type: OperandType): number {
  return type === "TENSOR_QUANT8_ASYMM" ? 0 : -typeMax(type);
}

/**
 * A REDUCE_* definition: folds each output element over its input elements directly in the
 * output's element type (float16 rounds at each step, as Android's `_Float16` kernel does).
 */
export function reduceOperation<T extends OperationType>(
  spec: ReduceSpec<T>,
): OperationDefinition<T> {
  return {
    type: spec.type,
    validate: (signature) => validateReduction(signature, spec.versions, "BOOL"),
    prepare: prepareReduction,
    execute(inputs, outputs) {
      const input = inputs[REDUCTION.input];
      const plan = executionPlan(inputs);
      reduceGeneric(input.data!, plan, outputs[0].data!, {
        init: spec.init(input.type),
        fold: spec.fold,
      });
    },
  };
}
