/**
 * MobileNetV2-1.0 (224x224, 1000 classes) as an ONNX file with seeded weights, laid out as
 * exporters write it (NCHW; BatchNormalization already folded into the convolutions; ReLU6
 * as Clip with min/max inputs; GlobalAveragePool, Flatten, Gemm): about 3.5 M weights and
 * 300 M multiply-adds. Every engine of the benchmarks runs these same bytes.
 */
import { type GraphSpec, type NodeSpec, onnxBytes, seeded } from "../tools/onnx_graphs.ts";

/** Inverted-residual stages of MobileNetV2: expansion t, channels c, repeats n, stride s. */
const STAGES: readonly [number, number, number, number][] = [
  [1, 16, 1, 1],
  [6, 24, 2, 2],
  [6, 32, 3, 2],
  [6, 64, 4, 2],
  [6, 96, 3, 1],
  [6, 160, 3, 2],
  [6, 320, 1, 1],
];

/** The input's name and NCHW shape, and the output's name. */
export const MOBILENET_V2_INPUT = { name: "input", dims: [1, 3, 224, 224] } as const;
export const MOBILENET_V2_OUTPUT = "logits";

/**
 * The ONNX bytes of MobileNetV2 with weights drawn from `seed`; `batch` "N" exports the
 * batch extent symbolic, as published models have it.
 */
export function mobilenetV2Onnx(seed = 1, batch: number | string = 1): Uint8Array {
  const nodes: NodeSpec[] = [];
  const initializers: NonNullable<GraphSpec["initializers"]> = [
    { name: "relu6_min", dims: [], values: [0] },
    { name: "relu6_max", dims: [], values: [6] },
  ];
  let next = seed;
  let counter = 0;
  const fresh = (what: string) => `${what}_${counter++}`;
  /** A convolution (He-scaled weights so activations stay in range), then ReLU6 if asked. */
  const conv = (
    x: string,
    inChannels: number,
    outChannels: number,
    kernel: number,
    stride: number,
    group: number,
    relu6: boolean,
  ): string => {
    const w = fresh("w"), b = fresh("b"), y = fresh("conv");
    const fanIn = (inChannels / group) * kernel * kernel;
    const dims = [outChannels, inChannels / group, kernel, kernel];
    initializers.push({ name: w, dims, values: seeded(dims, next++, 2 * Math.sqrt(3 / fanIn)) });
    initializers.push({ name: b, dims: [outChannels], values: seeded([outChannels], next++, 0.2) });
    const pad = (kernel - 1) >> 1;
    nodes.push({
      op: "Conv",
      inputs: [x, w, b],
      outputs: [y],
      attributes: {
        kernel_shape: [kernel, kernel],
        strides: [stride, stride],
        pads: [pad, pad, pad, pad],
        group,
      },
    });
    if (!relu6) return y;
    const r = fresh("relu6");
    nodes.push({ op: "Clip", inputs: [y, "relu6_min", "relu6_max"], outputs: [r] });
    return r;
  };

  let x = conv(MOBILENET_V2_INPUT.name, 3, 32, 3, 2, 1, true);
  let channels = 32;
  for (const [expansion, outChannels, repeats, firstStride] of STAGES) {
    for (let i = 0; i < repeats; i++) {
      const stride = i === 0 ? firstStride : 1;
      const hidden = channels * expansion;
      let y = x;
      if (expansion !== 1) y = conv(y, channels, hidden, 1, 1, 1, true);
      y = conv(y, hidden, hidden, 3, stride, hidden, true);
      y = conv(y, hidden, outChannels, 1, 1, 1, false);
      if (stride === 1 && channels === outChannels) {
        const sum = fresh("add");
        nodes.push({ op: "Add", inputs: [x, y], outputs: [sum] });
        y = sum;
      }
      x = y;
      channels = outChannels;
    }
  }
  x = conv(x, channels, 1280, 1, 1, 1, true);
  nodes.push({ op: "GlobalAveragePool", inputs: [x], outputs: ["pooled"] });
  nodes.push({ op: "Flatten", inputs: ["pooled"], outputs: ["features"] });
  initializers.push({
    name: "fc_w",
    dims: [1000, 1280],
    values: seeded([1000, 1280], next++, 2 * Math.sqrt(3 / 1280)),
  });
  initializers.push({ name: "fc_b", dims: [1000], values: seeded([1000], next++, 0.2) });
  nodes.push({
    op: "Gemm",
    inputs: ["features", "fc_w", "fc_b"],
    outputs: [MOBILENET_V2_OUTPUT],
    attributes: { transB: 1 },
  });
  return onnxBytes({
    inputs: [{ name: MOBILENET_V2_INPUT.name, dims: [batch, ...MOBILENET_V2_INPUT.dims.slice(1)] }],
    outputs: [{ name: MOBILENET_V2_OUTPUT, dims: [batch, 1000] }],
    nodes,
    initializers,
    opset: 13,
  });
}
