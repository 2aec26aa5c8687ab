/**
 * ROI align (Mask R-CNN): each region of interest is divided into out-height x out-width
 * bins, each bin averages a grid of bilinearly interpolated samples. NHWC data; float32
 * arithmetic rounded step by step as the Android reference computes it, and a quant8
 * variant with 8-bit interpolation weights and a fixed-point output stage.
 */
import {
  clamp,
  multiplyByQuantizedMultiplier,
  quantizeMultiplierSmallerThanOne,
  roundHalfAwayFromZero,
} from "./fixed_point.ts";
import type { ImageDims } from "./image_layout.ts";
import type { Numbers, ReadonlyNumbers } from "./typed_arrays.ts";

const f = Math.fround;

/** The parameters of one ROI align run. */
export interface RoiAlignParams {
  outHeight: number;
  outWidth: number;
  /** Ratio of the original image to the feature map, per axis. */
  heightStride: number;
  widthStride: number;
  /** Samples per bin per axis; 0 = adaptive (ceil of the bin extent). */
  heightSamplingRatio: number;
  widthSamplingRatio: number;
}

/** One ROI's sampling grid in feature-map coordinates. */
interface RoiGrid {
  wRoiStart: number;
  hRoiStart: number;
  wStepSize: number;
  hStepSize: number;
  wSamplingRatio: number;
  hSamplingRatio: number;
  wBinSize: number;
  hBinSize: number;
}

function roiGrid(
  corners: readonly [number, number, number, number],
  params: RoiAlignParams,
): RoiGrid {
  const [wRoiStart, hRoiStart, wRoiEnd, hRoiEnd] = corners;
  const roiWidth = Math.max(f(wRoiEnd - wRoiStart), 1);
  const roiHeight = Math.max(f(hRoiEnd - hRoiStart), 1);
  const wStepSize = f(roiWidth / params.outWidth);
  const hStepSize = f(roiHeight / params.outHeight);
  const wSamplingRatio = params.widthSamplingRatio > 0
    ? params.widthSamplingRatio
    : Math.ceil(wStepSize);
  const hSamplingRatio = params.heightSamplingRatio > 0
    ? params.heightSamplingRatio
    : Math.ceil(hStepSize);
  return {
    wRoiStart,
    hRoiStart,
    wStepSize,
    hStepSize,
    wSamplingRatio,
    hSamplingRatio,
    wBinSize: f(wStepSize / wSamplingRatio),
    hBinSize: f(hStepSize / hSamplingRatio),
  };
}

/** One bilinear sample: the four corner offsets (per channel 0) and their weights. */
interface Sample {
  offsets: [number, number, number, number];
  weights: [number, number, number, number];
}

function sampleAt(x: number, y: number, dims: ImageDims): Sample {
  const { height, width, depth } = dims;
  let x1 = Math.floor(x);
  let y1 = Math.floor(y);
  let x2 = x1 + 1;
  let y2 = y1 + 1;
  let dx1 = f(x - x1);
  let dy1 = f(y - y1);
  if (x1 >= width - 1) {
    x1 = x2 = width - 1;
    dx1 = 0;
  }
  if (y1 >= height - 1) {
    y1 = y2 = height - 1;
    dy1 = 0;
  }
  const dx2 = f(1 - dx1);
  const dy2 = f(1 - dy1);
  const row = width * depth;
  return {
    offsets: [
      y1 * row + x1 * depth,
      y1 * row + x2 * depth,
      y2 * row + x1 * depth,
      y2 * row + x2 * depth,
    ],
    weights: [f(dx2 * dy2), f(dx1 * dy2), f(dx2 * dy1), f(dx1 * dy1)],
  };
}

/** Calls `visit` for every sample of bin (i, j) of a grid. */
function forEachSample(
  grid: RoiGrid,
  i: number,
  j: number,
  dims: ImageDims,
  visit: (sample: Sample) => void,
): void {
  const wStart = f(f(grid.wStepSize * j) + grid.wRoiStart);
  const hStart = f(f(grid.hStepSize * i) + grid.hRoiStart);
  const halfW = f(grid.wBinSize / 2);
  const halfH = f(grid.hBinSize / 2);
  for (let yInd = 0; yInd < grid.hSamplingRatio; yInd++) {
    const y = f(f(hStart + halfH) + f(grid.hBinSize * yInd));
    for (let xInd = 0; xInd < grid.wSamplingRatio; xInd++) {
      const x = f(f(wStart + halfW) + f(grid.wBinSize * xInd));
      visit(sampleAt(x, y, dims));
    }
  }
}

/** Whether an ROI (in image coordinates scaled to the map) lies inside the map. */
function roiInBounds(
  corners: readonly [number, number, number, number],
  dims: ImageDims,
): boolean {
  const [x1, y1, x2, y2] = corners;
  return x1 <= dims.width && y1 <= dims.height && x2 <= dims.width && y2 <= dims.height &&
    x1 <= x2 && y1 <= y2;
}

/**
 * Float ROI align on NHWC float32 data. `rois` holds [x1, y1, x2, y2] per ROI in image
 * coordinates, `batchIds` the batch of each. Returns the index of the first malformed ROI
 * (bad batch, negative or out-of-map corner, inverted box), or -1 when all were aligned.
 */
export function f32RoiAlignNhwc(
  input: ReadonlyNumbers,
  dims: ImageDims,
  rois: ReadonlyNumbers,
  batchIds: ReadonlyNumbers,
  params: RoiAlignParams,
  output: Numbers,
): number {
  const { height, width, depth } = dims;
  const heightScale = f(1 / params.heightStride);
  const widthScale = f(1 / params.widthStride);
  const numRois = batchIds.length;
  const planeSize = height * width * depth;
  const sums = new Float32Array(depth);
  let out = 0;
  for (let r = 0; r < numRois; r++) {
    const batch = batchIds[r];
    const raw = [rois[4 * r], rois[4 * r + 1], rois[4 * r + 2], rois[4 * r + 3]];
    if (batch < 0 || batch >= dims.batches || raw.some((v) => !(v >= 0))) return r;
    const corners: [number, number, number, number] = [
      f(raw[0] * widthScale),
      f(raw[1] * heightScale),
      f(raw[2] * widthScale),
      f(raw[3] * heightScale),
    ];
    if (!roiInBounds(corners, dims) || raw[0] > raw[2] || raw[1] > raw[3]) return r;
    const grid = roiGrid(corners, params);
    const count = grid.wSamplingRatio * grid.hSamplingRatio;
    const base = batch * planeSize;
    for (let i = 0; i < params.outHeight; i++) {
      for (let j = 0; j < params.outWidth; j++) {
        sums.fill(0);
        forEachSample(grid, i, j, dims, ({ offsets, weights }) => {
          for (let k = 0; k < depth; k++) {
            let interpolation = 0;
            for (let c = 0; c < 4; c++) {
              interpolation = f(interpolation + f(weights[c] * input[base + offsets[c] + k]));
            }
            sums[k] = f(sums[k] + interpolation);
          }
        });
        for (let k = 0; k < depth; k++) output[out + k] = f(sums[k] / count);
        out += depth;
      }
    }
  }
  return -1;
}

/** Quantization of a quant8 ROI align: input and output scale/zero point, ROI scale. */
export interface RoiAlignQuantization {
  inputScale: number;
  inputZeroPoint: number;
  outputScale: number;
  outputZeroPoint: number;
  /** Scale of the TENSOR_QUANT16_ASYMM ROI coordinates (NNAPI requires 0.125). */
  roiScale: number;
}

/**
 * Quant8 ROI align on NHWC uint8 data with uint16 ROI coordinates: interpolation weights
 * quantized to 1/255, integer sums, one fixed-point multiplier per ROI. Returns the index of
 * the first malformed ROI, or -1.
 */
export function u8RoiAlignNhwc(
  input: ReadonlyNumbers,
  dims: ImageDims,
  rois: ReadonlyNumbers,
  batchIds: ReadonlyNumbers,
  params: RoiAlignParams,
  quantization: RoiAlignQuantization,
  output: Numbers,
): number {
  const { height, width, depth } = dims;
  const wScale = f(1 / 255);
  const heightScale = f(1 / params.heightStride);
  const widthScale = f(1 / params.widthStride);
  const roiScale = f(quantization.roiScale);
  const numRois = batchIds.length;
  const planeSize = height * width * depth;
  const sums = new Array<number>(depth);
  let out = 0;
  for (let r = 0; r < numRois; r++) {
    const batch = batchIds[r];
    const corners: [number, number, number, number] = [
      f(f(rois[4 * r] * widthScale) * roiScale),
      f(f(rois[4 * r + 1] * heightScale) * roiScale),
      f(f(rois[4 * r + 2] * widthScale) * roiScale),
      f(f(rois[4 * r + 3] * heightScale) * roiScale),
    ];
    if (batch < 0 || batch >= dims.batches || !roiInBounds(corners, dims)) return r;
    const grid = roiGrid(corners, params);
    const count = grid.wSamplingRatio * grid.hSamplingRatio;
    const realMultiplier = f(
      f(f(quantization.inputScale * wScale) / quantization.outputScale) / count,
    );
    const stage = quantizeMultiplierSmallerThanOne(realMultiplier);
    if (stage === null) return r;
    const base = batch * planeSize;
    for (let i = 0; i < params.outHeight; i++) {
      for (let j = 0; j < params.outWidth; j++) {
        sums.fill(0);
        forEachSample(grid, i, j, dims, ({ offsets, weights }) => {
          const quantWeights = weights.map((w) => roundHalfAwayFromZero(f(w / wScale)));
          for (let k = 0; k < depth; k++) {
            let interpolation = 0;
            for (let c = 0; c < 4; c++) {
              interpolation += quantWeights[c] *
                (input[base + offsets[c] + k] - quantization.inputZeroPoint);
            }
            sums[k] += interpolation;
          }
        });
        for (let k = 0; k < depth; k++) {
          const raw = multiplyByQuantizedMultiplier(sums[k], stage.multiplier, -stage.shift) +
            quantization.outputZeroPoint;
          output[out + k] = clamp(raw, 0, 255);
        }
        out += depth;
      }
    }
  }
  return -1;
}
