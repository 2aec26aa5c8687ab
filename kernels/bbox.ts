/**
 * Axis-aligned box kernels of the detection operations (NNAPI `GenerateProposals.cpp`):
 * box-delta decoding, intersection-over-union, hard non-maximum suppression, region
 * proposals and SSD detection post-processing. Boxes are `[x1, y1, x2, y2]` (detection
 * post-processing: `[y1, x1, y2, x2]`), computed in float32; quantized and float16 callers
 * convert to float32 first, as NNAPI does. Faults in the data are returned as messages.
 */
import { roundHalfAwayFromZero } from "./fixed_point.ts";
import type { ReadonlyNumbers } from "./typed_arrays.ts";

const f = Math.fround;

/** Data of a float or quantized operand as the kernels here read and write it. */
export type BoxData = Float32Array | Float16Array | Uint8Array | Uint16Array | Int16Array;

/**
 * The values as float32: float32 data itself, float16 widened, quantized data (any width)
 * dequantized as `scale * (q - zeroPoint)`.
 */
export function floatValues(data: BoxData, scale: number, zeroPoint: number): Float32Array {
  if (data instanceof Float32Array) return data;
  if (data instanceof Float16Array) return Float32Array.from(data);
  const out = new Float32Array(data.length);
  for (let i = 0; i < data.length; i++) out[i] = scale * (data[i] - zeroPoint);
  return out;
}

/**
 * Stores float32 results: float data takes them as they are (float16 rounds), quantized
 * data gets `zeroPoint + round(x / scale)` (halves away from zero) saturated to its type.
 */
export function storeValues(
  values: ReadonlyNumbers,
  out: BoxData,
  quantization: { scale: number; zeroPoint: number },
): void {
  if (out instanceof Float32Array || out instanceof Float16Array) {
    for (let i = 0; i < out.length; i++) out[i] = values[i];
    return;
  }
  const [min, max] = out instanceof Uint8Array
    ? [0, 255]
    : out instanceof Uint16Array
    ? [0, 65535]
    : [-32768, 32767];
  const { scale, zeroPoint } = quantization;
  for (let i = 0; i < out.length; i++) {
    const q = zeroPoint + roundHalfAwayFromZero(f(values[i] / scale));
    out[i] = q < max ? (q > min ? q : min) : max;
  }
}

/** Extents of AXIS_ALIGNED_BBOX_TRANSFORM's operands. */
export interface BboxTransformDims {
  numRois: number;
  numClasses: number;
  numBatches: number;
}

/**
 * Applies per-class deltas `[dx, dy, dw, dh]` to each roi `[x1, y1, x2, y2]` and clips the
 * result to its batch's image `[height, width]`; returns a fault message or undefined.
 */
export function bboxTransform(
  data: {
    rois: ReadonlyNumbers;
    deltas: ReadonlyNumbers;
    batches: ReadonlyNumbers;
    imageInfo: ReadonlyNumbers;
  },
  dims: BboxTransformDims,
  out: Float32Array,
): string | undefined {
  const { rois, deltas, batches, imageInfo } = data;
  const { numRois, numClasses, numBatches } = dims;
  for (let r = 0; r < numRois; r++) {
    const batch = batches[r];
    if (!(batch >= 0 && batch < numBatches)) {
      return `roi ${r} has batch index ${batch}, expected 0 to ${numBatches - 1}`;
    }
    const [x1, y1, x2, y2] = [rois[4 * r], rois[4 * r + 1], rois[4 * r + 2], rois[4 * r + 3]];
    if (!(x1 <= x2 && y1 <= y2)) {
      return `roi ${r} [${x1}, ${y1}, ${x2}, ${y2}] has x2 < x1 or y2 < y1`;
    }
    const height = imageInfo[2 * batch];
    const width = imageInfo[2 * batch + 1];
    const w = f(x2 - x1);
    const h = f(y2 - y1);
    const x = f(f(x1 + x2) / 2);
    const y = f(f(y1 + y2) / 2);
    for (let c = 0; c < numClasses; c++) {
      const d = 4 * (r * numClasses + c);
      const newW = f(f(Math.exp(deltas[d + 2])) * w);
      const newH = f(f(Math.exp(deltas[d + 3])) * h);
      const newX = f(x + f(deltas[d] * w));
      const newY = f(y + f(deltas[d + 1] * h));
      out[d] = clip(f(newX - newW / 2), width);
      out[d + 1] = clip(f(newY - newH / 2), height);
      out[d + 2] = clip(f(newX + newW / 2), width);
      out[d + 3] = clip(f(newY + newH / 2), height);
    }
  }
  return undefined;
}

/** std::min(std::max(v, 0), limit). */
function clip(v: number, limit: number): number {
  const lo = v > 0 ? v : 0;
  return limit < lo ? limit : lo;
}

/** Intersection over union of the boxes at `a` and `b` (offsets into `boxes`), in float32. */
export function iouAxisAligned(boxes: ReadonlyNumbers, a: number, b: number): number {
  const area1 = f(f(boxes[a + 2] - boxes[a]) * f(boxes[a + 3] - boxes[a + 1]));
  const area2 = f(f(boxes[b + 2] - boxes[b]) * f(boxes[b + 3] - boxes[b + 1]));
  const x1 = Math.max(boxes[a], boxes[b]);
  const x2 = Math.min(boxes[a + 2], boxes[b + 2]);
  const y1 = Math.max(boxes[a + 1], boxes[b + 1]);
  const y2 = Math.min(boxes[a + 3], boxes[b + 3]);
  const w = Math.max(f(x2 - x1), 0);
  const h = Math.max(f(y2 - y1), 0);
  const intersection = f(w * h);
  const union = f(f(area1 + area2) - intersection);
  return f(intersection / union);
}

/**
 * Hard NMS in place on `select[start, end)`: repeatedly moves the highest-scoring candidate
 * (the first of equal ones) to the front and drops the rest whose IoU with it reaches
 * `iouThreshold`, keeping at most `maxDetections` (all when negative). `boxOffset` maps a
 * candidate to its box's offset in `boxes`. Returns the end of the kept range.
 */
export function hardNms(
  select: number[],
  range: { start: number; end: number },
  params: {
    scores: ReadonlyNumbers;
    boxes: ReadonlyNumbers;
    boxOffset: (candidate: number) => number;
    iouThreshold: number;
    maxDetections: number;
  },
): number {
  const { scores, boxes, boxOffset, iouThreshold } = params;
  let { start, end } = range;
  const limit = params.maxDetections < 0 ? end - start : params.maxDetections;
  let detections = 0;
  while (start < end && detections < limit) {
    let best = start;
    for (let i = start + 1; i < end; i++) {
      if (scores[select[best]] < scores[select[i]]) best = i;
    }
    [select[best], select[start]] = [select[start], select[best]];
    const kept = boxOffset(select[start]);
    for (let i = start + 1; i < end; i++) {
      if (iouAxisAligned(boxes, boxOffset(select[i]), kept) >= iouThreshold) {
        end--;
        [select[i], select[end]] = [select[end], select[i]];
        i--;
      }
    }
    start++;
    detections++;
  }
  return start;
}

/**
 * Hard NMS per class (class 0 is the background and skipped) over `numRois` rois of
 * `numClasses` scores each: candidates above `scoreThreshold`, at most `maxPerClass` per
 * class, then the best `maxDetections` overall by descending score (all when negative).
 * Returns the kept score indices (`roi * numClasses + class`).
 */
export function hardNmsMultiClass(
  scores: ReadonlyNumbers,
  boxes: ReadonlyNumbers,
  params: {
    numRois: number;
    numClasses: number;
    scoreThreshold: number;
    iouThreshold: number;
    maxDetections: number;
    maxPerClass: number;
    boxOffset: (candidate: number) => number;
  },
): number[] {
  const { numRois, numClasses, scoreThreshold } = params;
  const select: number[] = [];
  for (let c = 1; c < numClasses; c++) {
    const start = select.length;
    for (let r = 0; r < numRois; r++) {
      const index = r * numClasses + c;
      if (scores[index] > scoreThreshold) select.push(index);
    }
    const end = hardNms(select, { start, end: select.length }, {
      scores,
      boxes,
      boxOffset: params.boxOffset,
      iouThreshold: params.iouThreshold,
      maxDetections: params.maxPerClass,
    });
    select.length = end;
  }
  select.sort((a, b) => scores[b] - scores[a]);
  if (params.maxDetections >= 0 && select.length > params.maxDetections) {
    select.length = params.maxDetections;
  }
  return select;
}

/** GENERATE_PROPOSALS' parameters (NHWC extents of the score map). */
export interface ProposalParams {
  batches: number;
  height: number;
  width: number;
  anchors: number;
  heightStride: number;
  widthStride: number;
  preNmsTopN: number;
  postNmsTopN: number;
  iouThreshold: number;
  minSize: number;
}

/** The proposals of all batches, batch by batch. */
export interface Proposals {
  scores: Float32Array;
  rois: Float32Array;
  batches: Int32Array;
}

/**
 * GENERATE_PROPOSALS on NHWC float32 data: anchors shifted over the feature map, decoded
 * with the deltas and clipped to the image, the best `preNmsTopN` (all when not positive),
 * boxes not wider and taller than `minSize` or centred outside the image dropped, then hard
 * NMS keeping `postNmsTopN` (all when negative). Returns the proposals or a fault message.
 */
export function generateProposals(
  data: {
    scores: Float32Array;
    deltas: Float32Array;
    anchors: Float32Array;
    imageInfo: Float32Array;
  },
  params: ProposalParams,
): Proposals | string {
  const { batches, height, width, anchors } = params;
  const perBatch = height * width * anchors;
  const base = new Float32Array(perBatch * 4);
  for (let h = 0, i = 0; h < height; h++) {
    const hShift = f(h * params.heightStride);
    for (let w = 0; w < width; w++) {
      const wShift = f(w * params.widthStride);
      for (let a = 0; a < anchors; a++, i += 4) {
        base[i] = data.anchors[4 * a] + wShift;
        base[i + 1] = data.anchors[4 * a + 1] + hShift;
        base[i + 2] = data.anchors[4 * a + 2] + wShift;
        base[i + 3] = data.anchors[4 * a + 3] + hShift;
      }
    }
  }
  const transformed = new Float32Array(perBatch * 4);
  const zeros = new Int32Array(perBatch);
  const scores: number[] = [];
  const rois: number[] = [];
  const batchIds: number[] = [];
  for (let b = 0; b < batches; b++) {
    const batchScores = data.scores.subarray(b * perBatch, (b + 1) * perBatch);
    const fault = bboxTransform(
      {
        rois: base,
        deltas: data.deltas.subarray(b * perBatch * 4, (b + 1) * perBatch * 4),
        batches: zeros,
        imageInfo: data.imageInfo.subarray(2 * b, 2 * b + 2),
      },
      { numRois: perBatch, numClasses: 1, numBatches: 1 },
      transformed,
    );
    if (fault !== undefined) return fault;
    let select = Array.from({ length: perBatch }, (_, i) => i);
    if (params.preNmsTopN > 0 && params.preNmsTopN < select.length) {
      select.sort((x, y) => batchScores[y] - batchScores[x]);
      select.length = params.preNmsTopN;
    }
    const imageHeight = data.imageInfo[2 * b];
    const imageWidth = data.imageInfo[2 * b + 1];
    select = select.filter((i) => {
      const roiWidth = f(transformed[4 * i + 2] - transformed[4 * i]);
      const roiHeight = f(transformed[4 * i + 3] - transformed[4 * i + 1]);
      const xCenter = f(transformed[4 * i] + roiWidth / 2);
      const yCenter = f(transformed[4 * i + 1] + roiHeight / 2);
      return roiWidth > params.minSize && roiHeight > params.minSize &&
        xCenter < imageWidth && yCenter < imageHeight;
    });
    const end = hardNms(select, { start: 0, end: select.length }, {
      scores: batchScores,
      boxes: transformed,
      boxOffset: (i) => 4 * i,
      iouThreshold: params.iouThreshold,
      maxDetections: params.postNmsTopN,
    });
    for (const i of select.slice(0, end)) {
      for (let k = 0; k < 4; k++) rois.push(transformed[4 * i + k]);
      scores.push(batchScores[i]);
      batchIds.push(b);
    }
  }
  return {
    scores: Float32Array.from(scores),
    rois: Float32Array.from(rois),
    batches: Int32Array.from(batchIds),
  };
}

/** DETECTION_POSTPROCESSING's parameters. */
export interface DetectionParams {
  batches: number;
  anchors: number;
  classes: number;
  /** Values per anchor in the deltas (at least 4; the rest are ignored). */
  boxEncoding: number;
  /** Divisors of the y, x, h and w deltas. */
  scales: readonly [number, number, number, number];
  regularNms: boolean;
  maxDetections: number;
  maxClassesPerDetection: number;
  maxPerClass: number;
  scoreThreshold: number;
  iouThreshold: number;
  backgroundInLabel: boolean;
  /** Detection slots per batch in the outputs. */
  slots: number;
}

/** DETECTION_POSTPROCESSING's outputs, zero-filled beyond each batch's detections. */
export interface DetectionOutputs {
  scores: Float32Array;
  boxes: Float32Array;
  classes: Int32Array;
  detections: Int32Array;
}

/**
 * SSD detection post-processing: decodes center-size deltas against the anchors
 * `[yCenter, xCenter, h, w]` into boxes `[y1, x1, y2, x2]`, then per batch either regular
 * multi-class NMS or fast NMS on each anchor's best non-background class, writing scores,
 * boxes, class labels (shifted down by one unless the background is a label) and counts.
 */
export function detectionPostprocess(
  data: { scores: Float32Array; deltas: Float32Array; anchors: Float32Array },
  params: DetectionParams,
  out: DetectionOutputs,
): void {
  const { anchors, classes, boxEncoding, slots } = params;
  const [scaleY, scaleX, scaleH, scaleW] = params.scales;
  const labelShift = params.backgroundInLabel ? 0 : 1;
  out.scores.fill(0);
  out.boxes.fill(0);
  out.classes.fill(0);
  out.detections.fill(0);
  const boxes = new Float32Array(anchors * 4);
  for (let b = 0; b < params.batches; b++) {
    const scores = data.scores.subarray(b * anchors * classes, (b + 1) * anchors * classes);
    for (let a = 0; a < anchors; a++) {
      const anchor = data.anchors.subarray(4 * a, 4 * a + 4);
      const delta = data.deltas.subarray((b * anchors + a) * boxEncoding);
      const yCenter = f(anchor[0] + f(f(anchor[2] * delta[0]) / scaleY));
      const xCenter = f(anchor[1] + f(f(anchor[3] * delta[1]) / scaleX));
      const hHalf = f(f(anchor[2] * f(Math.exp(f(delta[2] / scaleH)))) * 0.5);
      const wHalf = f(f(anchor[3] * f(Math.exp(f(delta[3] / scaleW)))) * 0.5);
      boxes[4 * a] = yCenter - hHalf;
      boxes[4 * a + 1] = xCenter - wHalf;
      boxes[4 * a + 2] = yCenter + hHalf;
      boxes[4 * a + 3] = xCenter + wHalf;
    }
    let written = 0;
    const write = (score: number, anchor: number, label: number) => {
      const slot = b * slots + written++;
      out.scores[slot] = score;
      out.boxes.set(boxes.subarray(4 * anchor, 4 * anchor + 4), 4 * slot);
      out.classes[slot] = label - labelShift;
    };
    if (params.regularNms) {
      const select = hardNmsMultiClass(scores, boxes, {
        numRois: anchors,
        numClasses: classes,
        scoreThreshold: params.scoreThreshold,
        iouThreshold: params.iouThreshold,
        maxDetections: params.maxDetections,
        maxPerClass: params.maxPerClass,
        boxOffset: (i) => 4 * Math.floor(i / classes),
      });
      for (const i of select) write(scores[i], Math.floor(i / classes), i % classes);
    } else {
      const outClasses = Math.min(classes - 1, params.maxClassesPerDetection);
      const maxScores = new Float32Array(anchors);
      for (let a = 0; a < anchors; a++) {
        let best = scores[a * classes + 1];
        for (let c = 2; c < classes; c++) best = Math.max(best, scores[a * classes + c]);
        maxScores[a] = best;
      }
      const select: number[] = [];
      for (let a = 0; a < anchors; a++) if (maxScores[a] > params.scoreThreshold) select.push(a);
      const end = hardNms(select, { start: 0, end: select.length }, {
        scores: maxScores,
        boxes,
        boxOffset: (a) => 4 * a,
        iouThreshold: params.iouThreshold,
        maxDetections: params.maxDetections,
      });
      for (const a of select.slice(0, end)) {
        const labels = Array.from({ length: classes - 1 }, (_, i) => i + 1);
        labels.sort((x, y) => scores[a * classes + y] - scores[a * classes + x]);
        for (let c = 0; c < outClasses; c++) write(scores[a * classes + labels[c]], a, labels[c]);
      }
    }
    out.detections[b] = written;
  }
}
