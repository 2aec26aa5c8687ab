/**
 * Per-class non-maximum suppression of detection boxes (Android NNAPI BOX_WITH_NMS_LIMIT):
 * hard NMS and the soft-NMS kernels (linear, gaussian), a score threshold, a per-class and
 * a per-image detection limit. float32 arithmetic as the reference computes it.
 */
import { iouAxisAligned } from "./bbox.ts";
import type { ReadonlyNumbers } from "./typed_arrays.ts";

const f = Math.fround;

/** The suppression kernel: hard cut, linear decay or gaussian decay of overlapping scores. */
export type NmsKernel = "hard" | "linear" | "gaussian";

/** Parameters of one box NMS run. */
export interface BoxNmsParams {
  /** Boxes with a score not above this are dropped before suppression. */
  scoreThreshold: number;
  /** Limit per class and per image; negative = no limit. */
  maxDetections: number;
  kernel: NmsKernel;
  iouThreshold: number;
  /** Gaussian kernel sigma. */
  sigma: number;
  /** Boxes whose decayed score falls below this are suppressed. */
  nmsScoreThreshold: number;
}

/** The kept boxes: flat score indices (box * classes + class), grouped per input batch. */
export interface BoxNmsResult {
  /** Selected score indices, in output order. */
  selected: number[];
  /** The (decayed) score of every score index. */
  scores: Float32Array;
  /** Per group of consecutive boxes with one batch index: first box and box count. */
  groups: { firstBox: number; boxes: number; kept: number }[];
}

function decayFunction(params: BoxNmsParams): (iou: number) => number {
  const { iouThreshold, sigma } = params;
  switch (params.kernel) {
    case "hard":
      return (iou) => (iou < iouThreshold ? 1 : 0);
    case "linear":
      return (iou) => (iou < iouThreshold ? 1 : f(1 - iou));
    case "gaussian":
      return (iou) => f(Math.exp(f(f(-iou * iou) / sigma)));
  }
}

/**
 * Soft NMS within `select` (score indices of one class): repeatedly keeps the best
 * remaining box, decays the others by their overlap with it and drops those whose score
 * falls below the threshold. Returns the kept indices, best first.
 */
function suppressClass(
  select: number[],
  scores: Float32Array,
  boxOffset: (index: number) => number,
  boxes: ReadonlyNumbers,
  decay: (iou: number) => number,
  params: BoxNmsParams,
): number[] {
  const limit = params.maxDetections < 0 ? select.length : params.maxDetections;
  let start = 0;
  let end = select.length;
  while (start < end && start < limit) {
    let best = start;
    for (let i = start + 1; i < end; i++) if (scores[select[i]] > scores[select[best]]) best = i;
    [select[start], select[best]] = [select[best], select[start]];
    const kept = boxOffset(select[start]);
    for (let i = start + 1; i < end; i++) {
      const index = select[i];
      scores[index] = f(scores[index] * decay(iouAxisAligned(boxes, boxOffset(index), kept)));
      if (scores[index] < params.nmsScoreThreshold) {
        end--;
        [select[i], select[end]] = [select[end], select[i]];
        i--;
      }
    }
    start++;
  }
  return select.slice(0, start);
}

/** Groups of consecutive boxes with one batch index (the reference assumes them sorted). */
export function batchGroups(batchIds: ReadonlyNumbers): BoxNmsResult["groups"] {
  const groups: BoxNmsResult["groups"] = [];
  for (let i = 0; i < batchIds.length; i++) {
    if (i > 0 && batchIds[i] === batchIds[i - 1]) groups[groups.length - 1].boxes++;
    else groups.push({ firstBox: i, boxes: 1, kept: 0 });
  }
  return groups;
}

/**
 * Runs box NMS over `scores` [boxes, classes] and `boxes` [boxes, classes * 4] (float32
 * values), boxes grouped by consecutive equal `batchIds`. Class 0 is background and never
 * kept. Within a group the kept boxes are ordered by class, then by decreasing score.
 */
export function boxNms(
  scoresIn: ReadonlyNumbers,
  boxes: ReadonlyNumbers,
  batchIds: ReadonlyNumbers,
  numClasses: number,
  params: BoxNmsParams,
): BoxNmsResult {
  const scores = Float32Array.from(scoresIn as ArrayLike<number>);
  const decay = decayFunction(params);
  const groups = batchGroups(batchIds);
  const selected: number[] = [];
  for (const group of groups) {
    const first = group.firstBox * numClasses;
    const boxOffset = (index: number) => 4 * (first + index);
    const local = (index: number) => scores[first + index];
    let result: number[] = [];
    for (let c = 1; c < numClasses; c++) {
      const candidates: number[] = [];
      for (let b = 0; b < group.boxes; b++) {
        const index = b * numClasses + c;
        if (local(index) > params.scoreThreshold) candidates.push(index);
      }
      const view = scores.subarray(first);
      result = result.concat(suppressClass(candidates, view, boxOffset, boxes, decay, params));
    }
    result.sort((a, b) => local(b) - local(a));
    if (params.maxDetections >= 0 && result.length > params.maxDetections) {
      result.length = params.maxDetections;
    }
    result.sort((a, b) => {
      const ca = a % numClasses;
      const cb = b % numClasses;
      return ca === cb ? local(b) - local(a) : ca - cb;
    });
    group.kept = result.length;
    for (const index of result) selected.push(first + index);
  }
  return { selected, scores, groups };
}
