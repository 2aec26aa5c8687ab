/**
 * A MobileNet-v1-shaped float32 model built with the client SDK (224x224x3 input, 13
 * depthwise-separable blocks, average pool, fully connected, softmax): about 3.5 M weights,
 * deterministic pseudo-random values. For benchmarks of preparation and execution.
 */
import type { NnClient } from "../client/mod.ts";
import type { Model } from "../client/mod.ts";
import { seededFloats } from "../kernels/seeded_random.ts";

export { seededFloats };

/** Pointwise output channels and depthwise strides of MobileNet v1 (width 1.0). */
export const MOBILENET_BLOCKS: readonly [number, number][] = [
  [64, 1],
  [128, 2],
  [128, 1],
  [256, 2],
  [256, 1],
  [512, 2],
  [512, 1],
  [512, 1],
  [512, 1],
  [512, 1],
  [512, 1],
  [1024, 2],
  [1024, 1],
];

/** Builds (but does not finish) the model; `classes` sets the classifier width. */
export function buildMobileNet(
  client: NnClient,
  classes = 300,
): { model: Model; weightCount: number } {
  const model = client.model();
  let weightCount = 0;
  let seed = 1;
  const scalar = (v: number) => {
    const i = model.addOperand({ type: "INT32", dimensions: [] });
    model.setOperandValue(i, v);
    return i;
  };
  const constant = (dimensions: number[], scale: number) => {
    const i = model.addOperand({ type: "TENSOR_FLOAT32", dimensions });
    const n = dimensions.reduce((a, b) => a * b, 1);
    model.setOperandValue(i, seededFloats(n, seed++, scale));
    weightCount += n;
    return i;
  };
  const tensor = (dimensions: number[]) => model.addOperand({ type: "TENSOR_FLOAT32", dimensions });
  const [same, valid, relu6] = [scalar(1), scalar(2), scalar(3)];
  const one = scalar(1), two = scalar(2);
  const input = tensor([1, 224, 224, 3]);
  let size = 112, channels = 32;
  let x = tensor([1, size, size, channels]);
  model.addOperation("CONV_2D", [
    input,
    constant([32, 3, 3, 3], 0.5),
    constant([32], 0.1),
    same,
    two,
    two,
    relu6,
  ], [x]);
  for (const [out, stride] of MOBILENET_BLOCKS) {
    size = stride === 2 ? size / 2 : size;
    const dw = tensor([1, size, size, channels]);
    const s = stride === 2 ? two : one;
    model.addOperation("DEPTHWISE_CONV_2D", [
      x,
      constant([1, 3, 3, channels], 0.5),
      constant([channels], 0.1),
      same,
      s,
      s,
      one,
      relu6,
    ], [dw]);
    const pw = tensor([1, size, size, out]);
    model.addOperation("CONV_2D", [
      dw,
      constant([out, 1, 1, channels], 2 / Math.sqrt(channels)),
      constant([out], 0.1),
      same,
      one,
      one,
      relu6,
    ], [pw]);
    x = pw;
    channels = out;
  }
  const pooled = tensor([1, 1, 1, channels]);
  model.addOperation(
    "AVERAGE_POOL_2D",
    [x, valid, one, one, scalar(size), scalar(size), scalar(0)],
    [
      pooled,
    ],
  );
  const flat = tensor([1, channels]);
  const shape = model.addOperand({ type: "TENSOR_INT32", dimensions: [2] });
  model.setOperandValue(shape, new Int32Array([1, channels]));
  model.addOperation("RESHAPE", [pooled, shape], [flat]);
  const logits = tensor([1, classes]);
  model.addOperation("FULLY_CONNECTED", [
    flat,
    constant([classes, channels], 2 / Math.sqrt(channels)),
    constant([classes], 0.1),
    scalar(0),
  ], [logits]);
  const probabilities = tensor([1, classes]);
  const beta = model.addOperand({ type: "FLOAT32", dimensions: [] });
  model.setOperandValue(beta, 1);
  model.addOperation("SOFTMAX", [logits, beta], [probabilities]);
  model.identifyInputsAndOutputs([input], [probabilities]);
  return { model, weightCount };
}
