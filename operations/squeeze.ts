/**
 * SQUEEZE: removes dimensions of size 1 (NNAPI Squeeze.cpp). Inputs: 0 the tensor
 * (TENSOR_FLOAT32, TENSOR_QUANT8_ASYMM, or TENSOR_FLOAT16 since HAL 1.2; rank 1 to 4), 1 the
 * optional dims to squeeze (TENSOR_INT32 rank 1, negative dims count from the end; each must
 * have size 1; omitted or empty = every size-1 dim). The output keeps the input's
 * quantization.
 */
import { copyElements } from "../kernels/shape_transform.ts";
import { resolveAxis } from "./common/axis.ts";
import {
  checkShapeRank,
  int32Vector,
  MOVED_TYPES,
  validateMoved,
  versionWithFloat16,
} from "./common/shape_ops.ts";
import { check, checkArity, type OperationDefinition, type PrepareInput } from "./operation.ts";

const DIMS = 1;

/** The output shape: the input shape without the squeezed dims. */
function squeezedShape(inputs: readonly PrepareInput[]): number[] {
  const shape = inputs[0].shape;
  checkShapeRank(shape, "input 0", 1, 4);
  const dims = inputs[DIMS];
  const values = dims.value === null ? [] : int32Vector(dims, `squeeze dims (input ${DIMS})`);
  if (values.length === 0) return shape.filter((d) => d !== 1);
  const squeezed = new Set<number>();
  for (const value of values) {
    const d = resolveAxis(Number(value), shape.length, `squeeze dims (input ${DIMS})`);
    check(shape[d] === 1, `squeeze dims (input ${DIMS}) name dimension ${d} of size ${shape[d]}`);
    squeezed.add(d);
  }
  return shape.filter((_, d) => !squeezed.has(d));
}

/** SQUEEZE (HAL 1.1; float16 needs HAL 1.2). */
export const squeeze: OperationDefinition<"SQUEEZE"> = {
  type: "SQUEEZE",
  optionalInputs: [DIMS],

  validate(signature) {
    checkArity(signature, [2], 1);
    const input = validateMoved(signature, {
      supported: MOVED_TYPES,
      params: ["TENSOR_INT32"],
      ranks: [[0, "input 0", "at most 4"], [DIMS, `squeeze dims (input ${DIMS})`, 1]],
    });
    return versionWithFloat16(input, "V1_1");
  },

  prepare(inputs) {
    return [squeezedShape(inputs)];
  },

  // No work: the arena gives the output its input's bytes (`arena_layout.ts`), and
  // elsewhere it is one block copy.
  cost: () => 0,

  execute(inputs, outputs) {
    copyElements(inputs[0].data!, outputs[0].data!);
  },
};
