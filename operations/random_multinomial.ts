/**
 * RANDOM_MULTINOMIAL (HAL 1.2): draws samples from the categorical distributions given by
 * unnormalized log-probabilities (NNAPI `Multinomial.cpp`). Inputs: 0 the logits
 * [batches, classes] (TENSOR_FLOAT32 or TENSOR_FLOAT16), 1 the number of samples (INT32),
 * 2 two seeds (TENSOR_INT32 [2]). Output: the drawn class indices (TENSOR_INT32
 * [batches, samples]). Sampling is seeded: equal seeds give equal samples (see
 * `kernels/multinomial.ts` for the generator).
 */
import { multinomial, SeededUniform } from "../kernels/multinomial.ts";
import { type FloatData, toFloat32 } from "../kernels/typed_arrays.ts";
import { elementCount } from "../nnapi/tensor.ts";
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  scalarOf,
  scalarValue,
} from "./operation.ts";

const MULTINOMIAL = { logits: 0, samples: 1, seeds: 2 } as const;

/** RANDOM_MULTINOMIAL: one output, the sampled class indices. */
export const randomMultinomial: OperationDefinition<"RANDOM_MULTINOMIAL"> = {
  type: "RANDOM_MULTINOMIAL",
  validate(signature) {
    checkArity(signature, [3], 1);
    const logits = signature.inputs[MULTINOMIAL.logits];
    checkInputType(logits, MULTINOMIAL.logits, ["TENSOR_FLOAT32", "TENSOR_FLOAT16"]);
    checkTypes(signature, [logits.type, "INT32", "TENSOR_INT32"], ["TENSOR_INT32"]);
    checkRank(logits, "input 0", (r) => r === 2, "2");
    checkRank(signature.inputs[MULTINOMIAL.seeds], "input 2", (r) => r === 1, "1");
    checkRank(signature.outputs[0], "output 0", (r) => r === 2, "2");
    return "V1_2";
  },
  prepare(inputs) {
    const logits = inputs[MULTINOMIAL.logits].shape;
    check(logits.length === 2, `input 0 has rank ${logits.length}, expected 2`);
    const seeds = inputs[MULTINOMIAL.seeds].shape;
    check(
      seeds.length === 1 && seeds[0] >= 2,
      `input 2 [${seeds.join(",")}] must hold 2 seeds`,
    );
    const samples = scalarValue(inputs[MULTINOMIAL.samples], "sample count (input 1)");
    check(
      Number.isInteger(samples) && samples >= 0,
      `input 1 is sample count ${samples}, expected a non-negative integer`,
    );
    return [[logits[0], samples]];
  },
  /** A binary search over the classes per sample, after one pass over the logits. */
  cost: (inputs, outputs) =>
    elementCount(inputs[0].shape) +
    elementCount(outputs[0].shape) * Math.ceil(Math.log2(inputs[0].shape[1] + 1)),
  execute(inputs, outputs) {
    const logits = inputs[MULTINOMIAL.logits];
    const seeds = inputs[MULTINOMIAL.seeds].data as Int32Array;
    const [batches, classes] = logits.shape;
    multinomial(
      toFloat32(logits.data as FloatData),
      { batches, classes, samples: scalarOf(inputs[MULTINOMIAL.samples]) },
      new SeededUniform(seeds[0], seeds[1]),
      outputs[0].data as Int32Array,
    );
  },
};
