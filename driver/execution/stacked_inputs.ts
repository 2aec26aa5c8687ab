/**
 * Inputs of a batched run: the executions' own blocks travel to the executor as they are
 * (transferred, not copied), and the executor stacks them along the first extent where it
 * runs them, so the driver's thread copies nothing proportional to the batch. The stacked
 * inputs come back with the answer, and a batch that must be run again one execution at a
 * time takes each execution's rows from them.
 */
import type { RunInput } from "../compilation/plan.ts";
import { elementCount, type TensorData } from "../../nnapi/tensor.ts";

/**
 * The inputs of several executions (one shape signature) as one batched run of `rows`
 * rows: each input's blocks in execution order, stacked (zero rows after them up to
 * `rows`) by {@link stacked} where the run happens.
 */
export function stackLater(
  executions: readonly (readonly RunInput[])[],
  rows: number,
): RunInput[] {
  return executions[0].map((first, i) => ({
    data: null,
    shape: [rows, ...first.shape.slice(1)],
    stacked: executions.map((inputs) => inputs[i].data!),
  }));
}

/** An input with its blocks stacked into its data (an input without blocks as it is). */
export function stacked(input: RunInput): RunInput {
  if (!input.stacked) return input;
  const [first] = input.stacked;
  const data = new (first.constructor as new (length: number) => TensorData)(
    elementCount(input.shape),
  );
  let offset = 0;
  for (const part of input.stacked) {
    (data as Float32Array).set(part as Float32Array, offset);
    offset += part.length;
  }
  return { data, shape: input.shape };
}

/**
 * Each execution's own inputs again, copied out of the stacked ones (`rows`: the first
 * extent of each execution, in stacking order): each goes to an executor on its own.
 */
export function rowsOf(inputs: readonly RunInput[], rows: readonly number[]): RunInput[][] {
  const total = inputs[0].shape[0];
  let row = 0;
  return rows.map((count) => {
    const own = inputs.map((input) => {
      const perRow = input.data!.length / total;
      return {
        data: input.data!.slice(row * perRow, (row + count) * perRow) as TensorData,
        shape: [count, ...input.shape.slice(1)],
      };
    });
    row += count;
    return own;
  });
}
