/**
 * BATCH_MATMUL (NNAPI feature level 6, beyond HAL 1.3; here with HAL 1.3's operand types):
 * the matrix product of each pair of slices of two tensors of equal rank (2 to 4) and equal
 * leading extents, [..., m, k] x [..., k, n] -> [..., m, n]; inputs 2 and 3 (adj_x, adj_y,
 * BOOL, optional as a pair) transpose the last two axes of either first. Float32 or float16;
 * the ONNX converter uses it for products of two tensors whose leading extents are given at
 * execution (attention over a text line of any width).
 */
import { elementCount, type TensorInfo } from "../nnapi/tensor.ts";
import { checkInputType } from "./common/operand_types.ts";
import {
  check,
  checkArity,
  checkRank,
  checkTypes,
  type OperationDefinition,
  type PrepareInput,
  scalarValue,
} from "./operation.ts";

/** Whether input `index` (adj_x or adj_y) is given and true. */
function adjoint(inputs: readonly PrepareInput[], index: number): boolean {
  const input = inputs[index];
  return input !== undefined && scalarValue(input, `input ${index}`) !== 0;
}

/** The product's geometry: batches, rows, inner and output columns. */
function geometry(inputs: readonly PrepareInput[]) {
  const [a, b] = inputs;
  const rank = a.shape.length;
  check(rank >= 2 && rank <= 4, `input 0 has rank ${rank}, expected 2 to 4`);
  check(b.shape.length === rank, `input 1 has rank ${b.shape.length}, expected ${rank}`);
  const lead = a.shape.slice(0, -2);
  lead.forEach((d, i) =>
    check(d === b.shape[i], `leading extents [${lead}] and [${b.shape.slice(0, -2)}] differ`)
  );
  const [adjX, adjY] = [adjoint(inputs, 2), adjoint(inputs, 3)];
  const [ar, ac] = a.shape.slice(-2);
  const [br, bc] = b.shape.slice(-2);
  const [m, k] = adjX ? [ac, ar] : [ar, ac];
  const [kb, n] = adjY ? [bc, br] : [br, bc];
  check(k === kb, `inner extents ${k} and ${kb} differ`);
  return { lead, m, k, n, adjX, adjY, batches: elementCount(lead) };
}

/** BATCH_MATMUL (feature level 6; HAL 1.3 types). */
export const batchMatmul: OperationDefinition<"BATCH_MATMUL"> = {
  type: "BATCH_MATMUL",
  optionalInputs: [2, 3],

  validate(signature) {
    checkArity(signature, [2, 4], 1);
    const [a] = signature.inputs;
    checkInputType(a, 0, ["TENSOR_FLOAT32", "TENSOR_FLOAT16"]);
    const flags = signature.inputs.length === 4 ? ["BOOL", "BOOL"] as const : [];
    checkTypes(signature, [a.type, a.type, ...flags], [a.type]);
    for (const [i, operand] of signature.inputs.slice(0, 2).entries()) {
      checkRank(operand, `input ${i}`, (r) => r >= 2 && r <= 4, "2 to 4");
    }
    return "V1_3";
  },

  prepare(inputs) {
    const { lead, m, n } = geometry(inputs);
    return [[...lead, m, n]];
  },

  cost(inputs: readonly PrepareInput[], _outputs: readonly TensorInfo[]) {
    const { batches, m, k, n } = geometry(inputs);
    return batches * m * k * n;
  },

  execute(inputs, outputs) {
    const g = geometry(inputs.map((t) => ({ ...t, value: t.data })));
    const a = inputs[0].data!;
    const b = inputs[1].data!;
    const out = outputs[0].data!;
    const { m, k, n } = g;
    // Element strides of a[i][p] and b[p][j] in each slice.
    const [aRow, aCol] = g.adjX ? [1, m] : [k, 1];
    const [bRow, bCol] = g.adjY ? [1, k] : [n, 1];
    for (let t = 0; t < g.batches; t++) {
      const aBase = t * m * k, bBase = t * k * n, oBase = t * m * n;
      for (let i = 0; i < m; i++) {
        for (let j = 0; j < n; j++) {
          let sum = 0;
          for (let p = 0; p < k; p++) {
            sum += (a[aBase + i * aRow + p * aCol] as number) *
              (b[bBase + p * bRow + j * bCol] as number);
          }
          out[oBase + i * n + j] = sum;
        }
      }
    }
  },
};
