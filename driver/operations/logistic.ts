/** LOGISTIC: 1 / (1 + exp(-x)). */
import {
  logisticFloat32,
  logisticQuant8Table,
  lookupQuant8,
  sigmoidQuant8Params,
} from "../../kernels/activation_functions.ts";
import type { DeclaredOperand, OperationDefinition } from "./operation.ts";
import { check, OperationError } from "./operation.ts";
import { unaryOperation } from "./relu.ts";

/**
 * Checks the fixed output quantization of quantized LOGISTIC/TANH and that the input scale
 * gives a usable input multiplier (NNAPI fails the execution otherwise).
 */
export function checkSigmoidQuantization(
  input: DeclaredOperand,
  output: DeclaredOperand,
  scale: number,
  zeroPoint: number,
  scaleText: string,
): void {
  check(
    output.scale === scale && output.zeroPoint === zeroPoint,
    `output 0 (operand ${output.index}) must have scale ${scaleText} and zero point ` +
      `${zeroPoint}, has ${output.scale} and ${output.zeroPoint}`,
  );
  check(
    sigmoidQuant8Params(input.scale, input.zeroPoint) !== null,
    `input 0 (operand ${input.index}) has scale ${input.scale}, too small (must exceed 2^-27)`,
  );
}

/** LOGISTIC; quant8 output has scale 1/256 and zero point 0. */
export const logistic: OperationDefinition = unaryOperation({
  type: "LOGISTIC",
  float: logisticFloat32,
  quant8: {
    since: "V1_0",
    validate: (input, output) => checkSigmoidQuantization(input, output, 1 / 256, 0, "1/256"),
    execute(input, output) {
      const params = sigmoidQuant8Params(input.scale, input.zeroPoint);
      if (!params) throw new OperationError(`input scale ${input.scale} is too small`);
      lookupQuant8(
        input.data as Uint8Array,
        logisticQuant8Table(params),
        output.data as Uint8Array,
      );
    },
  },
});
