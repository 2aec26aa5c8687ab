/**
 * The constant generators of audio front ends: HannWindow, HammingWindow, BlackmanWindow and
 * MelWeightMatrix, folded at conversion as ONNX's reference computes them (a size known only
 * at execution is refused).
 */
import type { NodeView } from "../node_view.ts";
import type { Rule } from "../rule.ts";
import {
  allocateHost,
  dataTypeName,
  type ElementType,
  elementType,
  type HostTensor,
  hostValues,
} from "../tensors.ts";
import { isIntegerType } from "./common.ts";

/** ONNX TensorProto.DataType FLOAT, the default output_datatype. */
const ONNX_FLOAT = 1;

/** A positive integer, or an error naming it. */
export function positive(value: number, what: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(`${what} is ${value}, expected a positive integer`);
  }
  return value;
}

/** The output element type an output_datatype attribute names (default float32). */
function outputType(node: NodeView): ElementType {
  const code = node.int("output_datatype", ONNX_FLOAT);
  const type = elementType(code);
  if (!isNumeric(type)) {
    throw new Error(
      `output_datatype ${dataTypeName(code)} is not supported (float, float16, double, ` +
        "int64, int32, int8 and uint8 are)",
    );
  }
  return type;
}

function isNumeric(type: string): type is ElementType {
  return ["float32", "float16", "float64", "int64", "int32", "int8", "uint8"].includes(type);
}

/** A host tensor of `values` in `type`, integer types truncating as a C++ cast does. */
function typed(type: ElementType, dims: number[], values: ArrayLike<number>): HostTensor {
  const out = allocateHost(type, dims);
  const integer = isIntegerType(type);
  for (let i = 0; i < values.length; i++) {
    out.data[i] = integer ? Math.trunc(values[i]) : values[i];
  }
  return out;
}

/** A constant scalar of a folded node, checked. */
function scalarOf(tensor: HostTensor | undefined, what: string): number {
  if (!tensor || tensor.data.length !== 1) {
    throw new Error(`${what} must be a scalar`);
  }
  return tensor.data[0];
}

/**
 * A cosine-sum window a0 - a1 cos(2 pi i / N) + a2 cos(4 pi i / N), N = size (periodic, the
 * default) or size - 1 (symmetric), as ONNX's HannWindow, HammingWindow, BlackmanWindow.
 */
function cosineSumWindow(a0: number, a1: number, a2: number): Rule {
  return {
    fold(node, [size]) {
      const n = scalarOf(size, "the window size");
      if (!Number.isInteger(n) || n < 0) throw new Error(`the window size is ${n}`);
      const denominator = node.int("periodic", 1) === 1 ? n : n - 1;
      const values = hostValues(n).map((_, i) => {
        const angle = (2 * Math.PI * i) / denominator;
        return a0 - a1 * Math.cos(angle) + a2 * Math.cos(2 * angle);
      });
      return [typed(outputType(node), [n], values)];
    },
    convert(node) {
      throw new Error(`the window size ('${node.inputs[0]}') must be a constant`);
    },
  };
}

function hzToMel(hz: number): number {
  return 2595 * Math.log10(1 + hz / 700);
}

function melToHz(mel: number): number {
  return 700 * (10 ** (mel / 2595) - 1);
}

/**
 * MelWeightMatrix [floor(dft_length / 2) + 1, num_mel_bins]: triangles between num_mel_bins
 * + 2 points evenly spaced in mel between the edges, as ONNX's reference computes them.
 */
const melWeightMatrix: Rule = {
  fold(node, [melBins, dftLength, sampleRate, lowerHz, upperHz]) {
    const mels = positive(scalarOf(melBins, "num_mel_bins"), "num_mel_bins");
    const n = positive(scalarOf(dftLength, "dft_length"), "dft_length");
    const rate = positive(scalarOf(sampleRate, "sample_rate"), "sample_rate");
    const lower = scalarOf(lowerHz, "lower_edge_hertz");
    const upper = scalarOf(upperHz, "upper_edge_hertz");
    if (upper < lower) {
      throw new Error(`upper_edge_hertz ${upper} is below lower_edge_hertz ${lower}`);
    }
    const spectrogramBins = Math.floor(n / 2) + 1;
    const index = (hz: number) => Math.floor(((n + 1) * hz) / rate);
    for (const [edge, hz] of [["lower_edge_hertz", lower], ["upper_edge_hertz", upper]] as const) {
      const i = index(hz);
      if (!(i >= 0 && i < spectrogramBins)) {
        throw new Error(
          `${edge} ${hz} falls in bin ${i}, outside the ${spectrogramBins} bins of dft_length ` +
            `${n} at sample_rate ${rate}`,
        );
      }
    }
    const low = hzToMel(lower);
    const step = (hzToMel(upper) - low) / (mels + 2);
    const points = Array.from(hostValues(mels + 2), (_, i) => index(melToHz(low + step * i)));
    const values = hostValues(spectrogramBins * mels);
    for (let m = 0; m < mels; m++) {
      const [left, center, right] = points.slice(m, m + 3);
      if (center === left) values[center * mels + m] = 1;
      else {
        for (let j = left; j <= center; j++) values[j * mels + m] = (j - left) / (center - left);
      }
      for (let j = center; j < right; j++) values[j * mels + m] = (right - j) / (right - center);
    }
    return [typed(outputType(node), [spectrogramBins, mels], values)];
  },
  convert() {
    throw new Error("every input of MelWeightMatrix must be a constant");
  },
};

export const SPECTRAL_CONSTANT_RULES: Record<string, Rule> = {
  HannWindow: cosineSumWindow(0.5, 0.5, 0),
  HammingWindow: cosineSumWindow(25 / 46, 21 / 46, 0),
  BlackmanWindow: cosineSumWindow(0.42, 0.5, 0.08),
  MelWeightMatrix: melWeightMatrix,
};
