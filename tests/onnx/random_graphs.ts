/**
 * Random ONNX graphs for differential tests against onnxruntime: seeded chains of the motifs
 * published vision models are made of — convolutions of every kind (pointwise, 3x3, strided,
 * dilated, depthwise, grouped), PRelu and other activations, element-wise chains with
 * broadcast constants, squeeze-excitation gates, residual additions of values computed long
 * before, concatenations, reshapes and pools. Every value is NCHW float32.
 */
import type { GraphSpec, Initializer, NodeSpec } from "../../tools/onnx_graphs.ts";
import { seeded } from "../../tools/onnx_graphs.ts";

/** A value of the graph: its name and NCHW shape. */
interface Value {
  name: string;
  shape: [number, number, number, number];
}

/** A seeded integer generator (mulberry32). */
function random(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    below: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
    chance: (p: number) => next() < p,
  };
}

/** Builds one random graph; the same seed gives the same graph. */
export function randomGraph(seed: number): GraphSpec & { what: string[] } {
  const rng = random(seed);
  const nodes: NodeSpec[] = [];
  const initializers: Initializer[] = [];
  const what: string[] = [];
  let counter = 0;
  const fresh = (prefix: string) => `${prefix}${counter++}`;
  const constant = (dims: number[], scale: number) => {
    const name = fresh("w");
    initializers.push({ name, dims, values: seeded(dims, seed * 1000 + counter, scale) });
    return name;
  };
  const positive = (dims: number[]) => {
    const name = fresh("w");
    const values = seeded(dims, seed * 1000 + counter, 1).map((x) => 1 + x);
    initializers.push({ name, dims, values });
    return name;
  };
  const shapeConstant = (values: number[]) => {
    const name = fresh("shape");
    initializers.push({ name, dims: [values.length], values, int64: true });
    return name;
  };
  const node = (op: string, inputs: string[], attributes?: NodeSpec["attributes"]) => {
    const output = fresh(op.toLowerCase());
    nodes.push({ op, inputs, outputs: [output], ...(attributes ? { attributes } : {}) });
    return output;
  };

  const side = rng.pick([8, 12, 16]);
  const input: Value = { name: "x", shape: [1, rng.pick([3, 4, 8]), side, side] };
  const values: Value[] = [input];
  /** Mostly the newest value; sometimes an older one, which then lives long. */
  const operand = () =>
    rng.chance(0.7) ? values[values.length - 1] : values[rng.below(values.length)];
  const add = (name: string, shape: Value["shape"], label: string) => {
    values.push({ name, shape });
    what.push(label);
  };

  const conv = (v: Value, out: number, kind: string): Value => {
    const [, c, h, w] = v.shape;
    const k = kind === "pointwise" ? 1 : 3;
    const stride = kind === "strided" && h >= 4 ? 2 : 1;
    const dilation = kind === "dilated" && h >= 6 ? 2 : 1;
    const group = kind === "depthwise"
      ? c
      : kind === "grouped" && c % 2 === 0 && out % 2 === 0
      ? 2
      : 1;
    const outChannels = kind === "depthwise" ? c : out;
    const pad = (k - 1) * dilation / 2;
    const weights = constant([outChannels, c / group, k, k], 2 / Math.sqrt((c / group) * k * k));
    const bias = constant([outChannels], 0.5);
    const name = node("Conv", [v.name, weights, bias], {
      kernel_shape: [k, k],
      strides: [stride, stride],
      dilations: [dilation, dilation],
      pads: [pad, pad, pad, pad],
      group,
    });
    const size = (n: number) => Math.floor((n + 2 * pad - dilation * (k - 1) - 1) / stride) + 1;
    return { name, shape: [1, outChannels, size(h), size(w)] };
  };

  const activation = (v: Value): string => {
    const c = v.shape[1];
    const kind = rng.pick(["Relu", "PRelu", "Sigmoid", "Tanh", "LeakyRelu", "Clip", "Elu"]);
    if (kind === "PRelu") return node("PRelu", [v.name, constant([c, 1, 1], 1)]);
    if (kind === "LeakyRelu") return node("LeakyRelu", [v.name], { alpha: { float: 0.1 } });
    if (kind === "Clip") {
      const min = fresh("min"), max = fresh("max");
      initializers.push({ name: min, dims: [], values: [0] }, { name: max, dims: [], values: [6] });
      return node("Clip", [v.name, min, max]);
    }
    return node(kind, [v.name]);
  };

  const steps = 4 + rng.below(7);
  for (let s = 0; s < steps; s++) {
    const v = operand();
    const [, c, h, w] = v.shape;
    const motif = rng.pick([
      "conv",
      "conv",
      "activation",
      "binary",
      "broadcast",
      "se",
      "concat",
      "reshape",
      "pool",
    ]);
    if (motif === "conv") {
      const kind = rng.pick(["pointwise", "3x3", "strided", "dilated", "depthwise", "grouped"]);
      const out = conv(v, rng.pick([4, 6, 8, 12]), kind);
      const activated = rng.chance(0.6) ? activation(out) : out.name;
      add(activated, out.shape, `conv ${kind}`);
    } else if (motif === "activation") {
      add(activation(v), v.shape, "activation");
    } else if (motif === "binary") {
      const same = values.filter((u) => u !== v && u.shape.every((d, i) => d === v.shape[i]));
      if (same.length === 0) continue;
      const op = rng.pick(["Add", "Mul", "Sub", "Max"]);
      const other = rng.pick(same);
      add(node(op, rng.chance(0.5) ? [v.name, other.name] : [other.name, v.name]), v.shape, op);
    } else if (motif === "broadcast") {
      // A chain of element-wise operations with per-channel and scalar constants.
      let name = v.name;
      for (let k = 0; k < 2 + rng.below(3); k++) {
        const op = rng.pick(["Add", "Mul", "Sub", "Div"]);
        const dims = rng.chance(0.5) ? [c, 1, 1] : [1];
        // Divisors in [0.5, 1.5).
        name = node(op, [name, op === "Div" ? positive(dims) : constant(dims, 2)]);
      }
      add(name, v.shape, "element-wise chain");
    } else if (motif === "se") {
      // Squeeze-excitation: a per-channel gate from the value's mean, then x * gate + x.
      const squeezed = Math.max(2, c >> 1);
      const pooled = node("GlobalAveragePool", [v.name]);
      const down = node("Conv", [
        pooled,
        constant([squeezed, c, 1, 1], 1),
        constant([squeezed], 0.5),
      ], {
        kernel_shape: [1, 1],
      });
      const up = node("Conv", [
        node("Relu", [down]),
        constant([c, squeezed, 1, 1], 1),
        constant([c], 0.5),
      ], {
        kernel_shape: [1, 1],
      });
      const gated = node("Mul", [v.name, node("Sigmoid", [up])]);
      const residual = rng.chance(0.7) ? node("Add", [v.name, gated]) : gated;
      add(residual, v.shape, "squeeze-excitation");
    } else if (motif === "concat") {
      const same = values.filter((u) => u.shape[2] === h && u.shape[3] === w);
      const other = rng.pick(same);
      add(
        node("Concat", [v.name, other.name], { axis: 1 }),
        [1, c + other.shape[1], h, w],
        "concat",
      );
    } else if (motif === "reshape") {
      const flattened = node("Reshape", [v.name, shapeConstant([1, c * h * w])]);
      const activated = node("Relu", [flattened]);
      add(node("Reshape", [activated, shapeConstant([1, c, h, w])]), v.shape, "reshape");
    } else if (motif === "pool" && h >= 4 && w >= 4) {
      const op = rng.pick(["MaxPool", "AveragePool"]);
      const pooled = node(op, [v.name], { kernel_shape: [2, 2], strides: [2, 2] });
      add(pooled, [1, c, h >> 1, w >> 1], op);
    }
  }
  const last = values[values.length - 1];
  // A second output read long before the end keeps an early value alive to the end.
  const early = values.length > 2 && rng.chance(0.5)
    ? values[1 + rng.below(values.length - 2)]
    : undefined;
  const outputs = [last, ...(early && early !== last ? [early] : [])].map((v, k) => {
    const name = `y${k}`;
    nodes.push({ op: "Identity", inputs: [v.name], outputs: [name] });
    return { name, dims: v.shape as number[] };
  });
  return {
    inputs: [{ name: input.name, dims: input.shape as number[] }],
    outputs,
    nodes,
    initializers,
    opset: 13,
    what,
  };
}
