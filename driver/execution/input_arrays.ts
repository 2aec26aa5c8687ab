/**
 * The input arrays of the runs of one plan on the driver's own thread, made once and written
 * again by each run: a run there is synchronous from its inputs' decoding to its outputs'
 * copy, so no two runs ever hold them at once, and a tiny execution saves the typed arrays
 * it would allocate per input (about 0.3 µs each in Deno, where every typed array has its
 * backing store outside the heap). Only small inputs are kept: a large one is allocated per
 * run, as elsewhere.
 */
import { allocate, type TensorData } from "../../nnapi/tensor.ts";
import type { OperandType } from "../../nnapi/types.ts";

/** Inputs of at most this many elements are kept between runs. */
export const MAX_KEPT_ELEMENTS = 1024;

export class InputArrays {
  readonly #arrays: (TensorData | undefined)[] = [];

  /**
   * The array for input `k` (of `type`, `count` elements): the one kept from the last run
   * when it has that length, else a new one (kept when small); undefined for a large input,
   * which the caller allocates itself.
   */
  array(k: number, type: OperandType, count: number): TensorData | undefined {
    if (count > MAX_KEPT_ELEMENTS) return undefined;
    const kept = this.#arrays[k];
    if (kept !== undefined && kept.length === count) return kept;
    return this.#arrays[k] = allocate(type, count);
  }

  /** Whether `data` is one of the kept arrays (an output that is an input must be copied). */
  holds(data: TensorData | null): boolean {
    return data !== null && this.#arrays.includes(data);
  }
}
