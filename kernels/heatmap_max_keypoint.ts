/**
 * HEATMAP_MAX_KEYPOINT's kernel (NNAPI `HeatmapMaxKeypoint.cpp`): per box and keypoint, the
 * heatmap's maximum refined to sub-pixel precision by a quadratic (2nd-order Taylor) fit of
 * its 3x3 neighbourhood, mapped into the box. Float32 arithmetic throughout.
 */

const f = Math.fround;

/** Extents of the NHWC heatmap [boxes, size, size, keypoints]. */
export interface HeatmapDims {
  boxes: number;
  size: number;
  keypoints: number;
}

/**
 * The position correction and score of a 3x3 grid around the maximum (`grid[h][w]`);
 * `delta` stays [0, 0] and the score the centre when the Hessian is (nearly) singular
 * within `tolerance` (atol = rtol).
 */
function solveForDelta(
  grid: Float32Array,
  tolerance: number,
): { dx: number; dy: number; score: number } {
  const g = (h: number, w: number) => grid[3 * h + w];
  const b0 = f(-f(g(1, 2) - g(1, 0)) / 2);
  const b1 = f(-f(g(2, 1) - g(0, 1)) / 2);
  const a00 = f(f(g(1, 0) - f(2 * g(1, 1))) + g(1, 2));
  const a01 = f(f(f(f(g(2, 2) - g(2, 0)) - g(0, 2)) + g(0, 0)) / 4);
  const a11 = f(f(g(0, 1) - f(2 * g(1, 1))) + g(2, 1));
  const crossProd1 = f(a00 * a11);
  const crossProd2 = f(a01 * a01);
  const det = f(crossProd1 - crossProd2);
  const tol = f(tolerance);
  if (Math.abs(det) < f(tol + f(tol * crossProd1))) {
    return { dx: 0, dy: 0, score: g(1, 1) };
  }
  let dx = f(f(f(a11 * b0) - f(a01 * b1)) / det);
  let dy = f(f(f(a00 * b1) - f(a01 * b0)) / det);
  if (Math.abs(dx) > 1.5 || Math.abs(dy) > 1.5) {
    const scale = f(1.5 / Math.max(Math.abs(dx), Math.abs(dy)));
    dx = f(dx * scale);
    dy = f(dy * scale);
  }
  const quadratic = f(
    f(f(f(a00 * dx) + f(a01 * dy)) * dx) + f(f(f(a01 * dx) + f(a11 * dy)) * dy),
  );
  const score = f(f(f(g(1, 1) - f(b0 * dx)) - f(b1 * dy)) + f(quadratic / 2));
  return { dx, dy, score };
}

/**
 * Writes each keypoint's score to `scores` [boxes, keypoints] and its position (x, y) to
 * `keypoints` [boxes, keypoints, 2]; `boxes` holds [x1, y1, x2, y2] per box. Returns a fault
 * message for a box with x2 < x1 or y2 < y1.
 */
export function heatmapMaxKeypoint(
  data: { heatmap: Float32Array; boxes: Float32Array },
  dims: HeatmapDims & { tolerance: number },
  out: { scores: Float32Array; keypoints: Float32Array },
): string | undefined {
  const { size, keypoints } = dims;
  const grid = new Float32Array(9);
  for (let i = 0; i < dims.boxes; i++) {
    const [x1, y1, x2, y2] = data.boxes.subarray(4 * i, 4 * i + 4);
    if (!(x1 <= x2 && y1 <= y2)) return `box ${i} [${x1}, ${y1}, ${x2}, ${y2}] is inverted`;
    const heatmap = data.heatmap.subarray(i * size * size * keypoints);
    for (let j = 0; j < keypoints; j++) {
      let maxIndex = 0;
      let maxScore = -3.4028234663852886e38;
      for (let k = 0; k < size * size; k++) {
        const value = heatmap[k * keypoints + j];
        if (maxScore < value) {
          maxScore = value;
          maxIndex = k;
        }
      }
      const maxW = maxIndex % size;
      const maxH = Math.floor(maxIndex / size);
      for (let dh = -1; dh <= 1; dh++) {
        for (let dw = -1; dw <= 1; dw++) {
          const h = mirror(maxH + dh, size);
          const w = mirror(maxW + dw, size);
          grid[3 * (dh + 1) + dw + 1] = heatmap[(h * size + w) * keypoints + j];
        }
      }
      const { dx, dy, score } = solveForDelta(grid, dims.tolerance);
      const wRelative = f(f(f(maxW + dx) + 0.5) / size);
      const hRelative = f(f(f(maxH + dy) + 0.5) / size);
      const k = i * keypoints + j;
      out.scores[k] = score;
      out.keypoints[2 * k] = f(wRelative * f(x2 - x1)) + x1;
      out.keypoints[2 * k + 1] = f(hRelative * f(y2 - y1)) + y1;
    }
  }
  return undefined;
}

/** Out-of-range neighbour indices mirrored back inside (needs size >= 2). */
function mirror(index: number, size: number): number {
  return index < 0 ? 1 : index >= size ? size - 2 : index;
}
