/**
 * TensorFlow.js's WebAssembly backend (`@tensorflow/tfjs-backend-wasm`, XNNPACK inside) as a
 * peer: the ONNX graph is rebuilt from the same bytes as TensorFlow.js operations (NHWC,
 * each convolution fused with its bias and a following ReLU6, as a TensorFlow.js model of
 * it would be), for graphs made of Conv, Clip, Add, GlobalAveragePool, Flatten and Gemm
 * (MobileNetV2); other graphs cannot be built for it. It takes the image as NHWC, its own
 * layout (transposed once at preparation). Under Deno the backend has no threads (it takes
 * Node's path, where its threaded build is not offered), so it runs at one.
 */
import * as tf from "@tensorflow/tfjs-core";
import { setWasmPaths } from "@tensorflow/tfjs-backend-wasm";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeOnnx, list } from "../../converter/onnx/decode.ts";
import { NodeView } from "../../converter/onnx/node_view.ts";
import { tensorFromProto } from "../../converter/onnx/tensors.ts";
import { type Engine, NotBuildable } from "./engines.ts";

let backend: Promise<void> | undefined;

/** Loads the WebAssembly backend once (its .wasm files from the installed package). */
function wasmBackend(): Promise<void> {
  backend ??= (async () => {
    const entry = fileURLToPath(import.meta.resolve("@tensorflow/tfjs-backend-wasm"));
    setWasmPaths(`${dirname(entry)}/`);
    if (!(await tf.setBackend("wasm"))) throw new Error("tfjs-backend-wasm did not start");
    await tf.ready();
  })();
  return backend;
}

type Forward = (input: tf.Tensor4D) => tf.Tensor;

/** The op types this peer rebuilds. */
const BUILT = new Set(["Conv", "Clip", "Add", "GlobalAveragePool", "Flatten", "Gemm"]);

/**
 * ONNX pads as TensorFlow.js padding: "valid" without any, "same" where that is the same
 * (stride 1, an odd kernel padded by half), else zeros added first (TensorFlow.js's "same"
 * pads the bottom and right more at stride 2, and its numeric padding does not round the
 * output size as ONNX does).
 */
function padding(
  pads: number[],
  strides: number[],
  kernel: number[],
): { pad: "valid" | "same"; before?: [[0, 0], [number, number], [number, number], [0, 0]] } {
  const [top, left, bottom, right] = pads;
  if (pads.every((p) => p === 0)) return { pad: "valid" };
  const half = kernel.every((k, i) =>
    k % 2 === 1 && pads[i] === (k - 1) / 2 && pads[i + 2] === pads[i]
  );
  if (half && strides.every((s) => s === 1)) return { pad: "same" };
  return { pad: "valid", before: [[0, 0], [top, bottom], [left, right], [0, 0]] };
}

/** The graph as one function of the NHWC input (weights laid out for TensorFlow.js once). */
function buildForward(bytes: Uint8Array): { forward: Forward; weights: tf.Tensor[] } {
  const { model } = decodeOnnx(bytes);
  const graph = model.graph!;
  const weights = new Map(
    list(graph.initializer).map((t) => {
      const host = tensorFromProto(t);
      return [t.name ?? "", { dims: host.dims, data: Float32Array.from(host.data) }];
    }),
  );
  const nodes = list(graph.node).map((proto, i) => new NodeView(proto, i));
  const unsupported = nodes.find((node) => !BUILT.has(node.opType));
  if (unsupported) throw new NotBuildable(`op type ${unsupported.opType}`);
  const readers = new Map<string, number>();
  for (const node of nodes) {
    for (const name of node.inputs) readers.set(name, (readers.get(name) ?? 0) + 1);
  }
  const constant = (name: string) => {
    const w = weights.get(name);
    if (!w) throw new NotBuildable(`'${name}' is not a constant`);
    return w;
  };
  const steps: ((values: Map<string, tf.Tensor>) => void)[] = [];
  const kept: tf.Tensor[] = [];
  const keep = <T extends tf.Tensor>(t: T): T => {
    kept.push(t);
    return t;
  };
  const fused = new Set<number>();
  nodes.forEach((node, index) => {
    if (fused.has(index)) return;
    const [x] = node.inputs;
    const out = node.outputs[0];
    switch (node.opType) {
      case "Conv": {
        const w = constant(node.inputs[1]);
        const [outChannels, perGroup, kh, kw] = w.dims;
        const group = node.int("group", 1);
        const bias = keep(tf.tensor1d(constant(node.inputs[2]).data));
        const strides = node.ints("strides", [1, 1]) as [number, number];
        const { pad, before } = padding(node.ints("pads", [0, 0, 0, 0]), strides, [kh, kw]);
        const padded = (v: Map<string, tf.Tensor>) => {
          const input = v.get(x) as tf.Tensor4D;
          return before ? tf.pad(input, before) : input;
        };
        // A following Clip(0, 6) that alone reads the result becomes the fused activation.
        const next = nodes[index + 1];
        const relu6 = next?.opType === "Clip" && next.inputs[0] === out &&
          readers.get(out) === 1 && constant(next.inputs[1]).data[0] === 0 &&
          constant(next.inputs[2]).data[0] === 6;
        if (relu6) fused.add(index + 1);
        const result = relu6 ? next.outputs[0] : out;
        const activation = relu6 ? "relu6" : "linear";
        const depthwise = group !== 1;
        if (depthwise && !(perGroup === 1 && outChannels === group)) {
          throw new NotBuildable(`Conv with group ${group}`);
        }
        // OIHW -> HWIO, or [C, 1, kh, kw] -> [kh, kw, C, 1] for a depthwise filter.
        const oihw = tf.tensor4d(w.data, [outChannels, perGroup, kh, kw]);
        const filter = keep(tf.transpose(oihw, depthwise ? [2, 3, 0, 1] : [2, 3, 1, 0]));
        oihw.dispose();
        const convolve = depthwise ? tf.fused.depthwiseConv2d : tf.fused.conv2d;
        steps.push((v) =>
          v.set(
            result,
            convolve({
              x: padded(v),
              filter: filter as tf.Tensor4D,
              strides,
              pad,
              bias,
              activation,
            }),
          )
        );
        return;
      }
      case "Clip": {
        const [lo, hi] = [constant(node.inputs[1]).data[0], constant(node.inputs[2]).data[0]];
        steps.push((v) => v.set(out, tf.clipByValue(v.get(x)!, lo, hi)));
        return;
      }
      case "Add":
        steps.push((v) => v.set(out, tf.add(v.get(x)!, v.get(node.inputs[1])!)));
        return;
      case "GlobalAveragePool":
        steps.push((v) => v.set(out, tf.mean(v.get(x)!, [1, 2])));
        return;
      case "Flatten":
        steps.push((v) => v.set(out, tf.reshape(v.get(x)!, [v.get(x)!.shape[0], -1])));
        return;
      case "Gemm": {
        if (node.int("transB", 0) !== 1) throw new NotBuildable("Gemm without transB");
        const w = constant(node.inputs[1]);
        const b = keep(tf.tensor1d(constant(node.inputs[2]).data));
        const matrix = keep(tf.tensor2d(w.data, w.dims as [number, number]));
        steps.push((v) =>
          v.set(
            out,
            // Not tf.fused.matMul: with transposeB its answer here was off by whole units.
            tf.add(tf.matMul(v.get(x) as tf.Tensor2D, matrix, false, true), b),
          )
        );
        return;
      }
      default:
        throw new NotBuildable(`op type ${node.opType}`);
    }
  });
  const inputName = list(graph.input).find((i) => !weights.has(i.name ?? ""))?.name ?? "";
  const outputName = list(graph.output)[0]?.name ?? "";
  return {
    weights: kept,
    forward: (input) => {
      const values = new Map<string, tf.Tensor>([[inputName, input]]);
      for (const step of steps) step(values);
      return values.get(outputName)!;
    },
  };
}

export const TFJS_WASM: Engine = {
  name: "tfjs-backend-wasm",
  threadCounts: [1],
  async prepare(model, input) {
    await wasmBackend();
    const { forward, weights } = buildForward(model);
    const [n, c, h, w] = input.shape;
    const nchw = tf.tensor4d(input.data, [n, c, h, w]);
    const nhwc = tf.transpose(nchw, [0, 2, 3, 1]) as tf.Tensor4D;
    return {
      async run() {
        const output = tf.tidy(() => forward(nhwc));
        const data = await output.data<"float32">();
        output.dispose();
        return data;
      },
      close() {
        tf.dispose([nchw, nhwc, ...weights]);
        return Promise.resolve();
      },
    };
  },
};
