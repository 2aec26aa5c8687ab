/**
 * Operations along one axis (SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION) see a
 * tensor as outer * axis * inner elements: `outer * inner` vectors of `axis` elements, each
 * `inner` apart.
 */

/** Sizes around the axis: outer * axis * inner elements. */
export interface AxisSplit {
  outer: number;
  axis: number;
  inner: number;
}

/** Splits a shape around `axis` (already non-negative). */
export function splitAtAxis(shape: readonly number[], axis: number): AxisSplit {
  let outer = 1;
  let inner = 1;
  for (let d = 0; d < axis; d++) outer *= shape[d];
  for (let d = axis + 1; d < shape.length; d++) inner *= shape[d];
  return { outer, axis: shape[axis], inner };
}
