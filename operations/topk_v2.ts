/**
 * TOPK_V2: the k largest values along the last axis and their indices (two outputs, the
 * last dimension replaced by k). Values are copied, so every type runs unconverted and
 * quant8 values keep the input's quantization.
 */
import { topK } from "../kernels/top_k.ts";
import type { Numbers } from "../kernels/typed_arrays.ts";
import { versionOfInputType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import { knownScalar } from "./common/scalars.ts";
import {
  check,
  checkArity,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  scalarValue,
} from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const TOPK_V2 = { input: 0, k: 1 } as const;

function checkK(k: number, lastDim: number, where: string): void {
  check(
    Number.isInteger(k) && k > 0 && k <= lastDim,
    `${where} is k ${k}, expected 1 to the last dimension ${lastDim}`,
  );
}

/** TOPK_V2 (HAL 1.2): outputs values (input type) and indices (TENSOR_INT32). */
export const topkV2: OperationDefinition<"TOPK_V2"> = withSignedQuant8({
  type: "TOPK_V2",
  validate(signature) {
    checkArity(signature, [2], 2);
    const input = signature.inputs[TOPK_V2.input];
    const version = versionOfInputType(input, {
      TENSOR_FLOAT32: "V1_2",
      TENSOR_FLOAT16: "V1_2",
      TENSOR_INT32: "V1_2",
      TENSOR_QUANT8_ASYMM: "V1_2",
    });
    checkTypes(signature, [input.type, "INT32"], [input.type, "TENSOR_INT32"]);
    const kOperand = signature.inputs[TOPK_V2.k];
    const k = knownScalar(kOperand);
    const lastDim = input.dimensions.at(-1);
    if (k !== undefined && lastDim) {
      checkK(k, lastDim, `input 1 (operand ${kOperand.index})`);
    }
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      checkSameQuantization(input, signature.outputs[0]);
    }
    return version;
  },
  prepare(inputs) {
    const shape = inputs[TOPK_V2.input].shape;
    check(shape.length >= 1, "input 0 has rank 0, expected at least 1");
    const k = scalarValue(inputs[TOPK_V2.k], "input 1");
    checkK(k, shape[shape.length - 1], "input 1");
    const out = [...shape.slice(0, -1), k];
    return [out, [...out]];
  },
  execute(inputs, outputs) {
    const input = inputs[TOPK_V2.input];
    const k = scalarOf(inputs[TOPK_V2.k]);
    topK(
      input.data!,
      { rowSize: input.shape[input.shape.length - 1], k },
      outputs[0].data as Numbers,
      outputs[1].data as Int32Array,
    );
  },
});
