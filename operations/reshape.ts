/**
 * RESHAPE: the input's elements under a new shape (NNAPI `reshapePrepare`). Inputs: 0 the
 * tensor (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2), 1 the target
 * shape (TENSOR_INT32, rank 1), whose one optional -1 entry is inferred from the element
 * count. The shape may be a model input, so the output shape may be known only at execution.
 */
import { copyElements } from "../kernels/shape_transform.ts";
import { elementCount } from "../nnapi/tensor.ts";
import { checkInputType } from "./common/operand_types.ts";
import { checkSameQuantization } from "./common/quantization.ts";
import type { OperationDefinition } from "./operation.ts";
import { check, checkArity, checkRank, checkTypes, tensorValue } from "./operation.ts";
import { withSignedQuant8 } from "./common/signed.ts";

const INPUT = 0;
const SHAPE = 1;

/** The output dims for a target shape with at most one -1 (inferred) entry. */
function targetDims(inputElements: number, target: ArrayLike<number>): number[] {
  const dims: number[] = [];
  let stretch = -1;
  let known = 1;
  for (let i = 0; i < target.length; i++) {
    const value = Number(target[i]);
    if (value === -1) {
      check(stretch === -1, `shape (input ${SHAPE}) has more than one -1 entry`);
      stretch = i;
      dims.push(0);
    } else {
      check(value >= 0, `shape (input ${SHAPE}) entry ${i} is ${value}`);
      known *= value;
      dims.push(value);
    }
  }
  if (stretch !== -1) {
    check(
      known > 0 && inputElements % known === 0,
      `cannot infer entry ${stretch} of shape (input ${SHAPE}) [${
        Array.from(target).join(",")
      }] for ${inputElements} elements`,
    );
    dims[stretch] = inputElements / known;
    known *= dims[stretch];
  }
  check(
    known === inputElements,
    `shape (input ${SHAPE}) [${
      Array.from(target).join(",")
    }] has ${known} elements but the input has ${inputElements}`,
  );
  return dims;
}

/** RESHAPE (HAL 1.0; float16 needs HAL 1.2). */
export const reshape: OperationDefinition<"RESHAPE"> = withSignedQuant8({
  type: "RESHAPE",

  validate(signature) {
    checkArity(signature, [2], 1);
    const input = signature.inputs[INPUT];
    checkInputType(input, INPUT, ["TENSOR_FLOAT32", "TENSOR_QUANT8_ASYMM", "TENSOR_FLOAT16"]);
    checkTypes(signature, [input.type, "TENSOR_INT32"], [input.type]);
    checkRank(signature.inputs[SHAPE], `input ${SHAPE}`, (r) => r === 1, "1");
    if (input.type === "TENSOR_QUANT8_ASYMM") {
      checkSameQuantization(input, signature.outputs[0], INPUT);
    }
    return input.type === "TENSOR_FLOAT16" ? "V1_2" : "V1_0";
  },

  prepare(inputs) {
    const shape = inputs[SHAPE].shape;
    check(shape.length === 1, `shape (input ${SHAPE}) has rank ${shape.length}, expected 1`);
    const target = tensorValue(inputs[SHAPE], `shape (input ${SHAPE})`);
    return [targetDims(elementCount(inputs[INPUT].shape), target)];
  },

  // No work: the arena gives the output its input's bytes (`arena_layout.ts`), and
  // elsewhere it is one block copy.
  cost: () => 0,

  execute(inputs, outputs) {
    // The shape may have been a model input, unknown when the output was shaped.
    const dims = targetDims(elementCount(inputs[INPUT].shape), inputs[SHAPE].data!);
    const shape = outputs[0].shape;
    check(
      dims.length === shape.length && dims.every((d, i) => d === shape[i]),
      `shape (input ${SHAPE}) gives [${dims.join(",")}] but output 0 is [${shape.join(",")}]`,
    );
    copyElements(inputs[INPUT].data!, outputs[0].data!);
  },
});
