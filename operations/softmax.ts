/**
 * SOFTMAX: exp(beta * (x - max)) / sum along an axis (the last one unless HAL 1.2's
 * optional axis input says otherwise). The quant8 parameters depend on beta and the input
 * scale only, so a compilation with static shapes computes them once per beta value.
 */
import type { AxisSplit } from "../kernels/axis_split.ts";
import {
  softmaxFloat32,
  softmaxQuant8,
  type SoftmaxQuant8Params,
  softmaxQuant8Params,
} from "../kernels/softmax_kernels.ts";
import { type FloatData, toFloat32, withFloat32Outputs } from "../kernels/typed_arrays.ts";
import type { Tensor } from "../nnapi/tensor.ts";
import {
  checkAxisInputRank,
  checkConstantAxis,
  checkKnownAxis,
  executionSplit,
  validateAlongAxis,
} from "./common/axis.ts";
import { floatScalarType, versionOfInputType } from "./common/operand_types.ts";
import { checkFixedQuantization } from "./common/quantization.ts";
import { knownScalar } from "./common/scalars.ts";
import { withSignedQuant8 } from "./common/signed.ts";
import {
  check,
  checkArity,
  type OperationDefinition,
  OperationError,
  scalarOf,
} from "./operation.ts";

const AXIS = 2;

function checkBeta(beta: number, where: string): void {
  check(beta > 0, `${where} is beta ${beta}, expected > 0`);
}

/** The quant8 parameters, or the failure NNAPI reports at execution. */
function quant8Params(beta: number, inputScale: number): SoftmaxQuant8Params {
  const params = softmaxQuant8Params(beta, inputScale);
  if (!params) throw new OperationError(`beta ${beta} times input scale is too small`);
  return params;
}

/** Runs SOFTMAX; `params(beta)` gives the quant8 parameters when they are needed. */
function run(
  inputs: readonly Tensor[],
  outputs: readonly Tensor[],
  params: (beta: number) => SoftmaxQuant8Params,
): void {
  const input = inputs[0];
  const output = outputs[0];
  const beta = scalarOf(inputs[1]);
  checkBeta(beta, "input 1");
  const split: AxisSplit = executionSplit(inputs, AXIS);
  if (output.data!.length === 0) return;
  if (input.type === "TENSOR_QUANT8_ASYMM") {
    softmaxQuant8(input.data as Uint8Array, split, params(beta), output.data as Uint8Array);
    return;
  }
  withFloat32Outputs([output.data as FloatData], ([result]) => {
    softmaxFloat32(toFloat32(input.data as FloatData), split, beta, result);
  });
}

/** SOFTMAX; quant8 output has scale 1/256 and zero point 0. */
const softmaxUnsigned: OperationDefinition<"SOFTMAX"> = {
  type: "SOFTMAX",
  validate(signature) {
    checkArity(signature, [2, 3], 1);
    const input = signature.inputs[0];
    const typeVersion = versionOfInputType(input, {
      TENSOR_FLOAT32: "V1_0",
      TENSOR_QUANT8_ASYMM: "V1_0",
      TENSOR_FLOAT16: "V1_2",
    });
    const version = validateAlongAxis(signature, typeVersion, {
      expected: [input.type, floatScalarType(input.type)],
      axisAt: AXIS,
      v10Ranks: [0, 2, 4],
    });
    const betaOperand = signature.inputs[1];
    const beta = knownScalar(betaOperand);
    if (beta !== undefined) checkBeta(beta, `input 1 (operand ${betaOperand.index})`);
    checkConstantAxis(signature.inputs, AXIS, input.dimensions.length);
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      checkFixedQuantization(signature.outputs[0], {
        scale: 1 / 256,
        zeroPoint: 0,
        scaleText: "1/256",
      });
      if (beta !== undefined) {
        check(
          softmaxQuant8Params(beta, input.scale) !== null,
          `beta ${beta} times input scale ${input.scale} (operand ${input.index}) is too small`,
        );
      }
    }
    return version;
  },
  prepare(inputs) {
    checkAxisInputRank(inputs);
    const beta = knownScalar(inputs[1]);
    if (beta !== undefined) checkBeta(beta, "input 1");
    checkKnownAxis(inputs, AXIS);
    return [[...inputs[0].shape]];
  },
  execute(inputs, outputs) {
    run(inputs, outputs, (beta) => quant8Params(beta, inputs[0].scale));
  },
  bindReference(inputs) {
    if (inputs[0].type !== "TENSOR_QUANT8_ASYMM") return undefined;
    const inputScale = inputs[0].scale;
    // Beta is almost always a constant: keep the parameters of the last one seen.
    let last: { beta: number; params: SoftmaxQuant8Params } | undefined;
    return (inputs, outputs) =>
      run(inputs, outputs, (beta) => {
        if (last?.beta !== beta) last = { beta, params: quant8Params(beta, inputScale) };
        return last.params;
      });
  },
};

/** SOFTMAX with the HAL 1.3 signed form (output zero point -128). */
export const softmax: OperationDefinition<"SOFTMAX"> = withSignedQuant8(softmaxUnsigned);
