/**
 * Static QDQ quantization of a float ONNX model, as onnxruntime's quantization tool does it
 * (QuantFormat.QDQ): every Conv's weights become int8 (per output channel from opset 13,
 * per tensor before) behind a
 * DequantizeLinear, every Conv input activation and every graph output passes through a
 * uint8 QuantizeLinear/DequantizeLinear pair whose range comes from calibration runs in
 * onnxruntime. No published QDQ model ships in the npm packages we can install, so tests
 * quantize a published float model this way.
 */
import type onnxProto from "onnx-proto";
import * as ort from "onnxruntime-node";
import { FLOAT, INT8, onnx, UINT8 } from "../../tools/onnx_graphs.ts";

type Graph = onnxProto.onnx.IGraphProto;

/** uint8 scale and zero point covering [min, max] (which always includes 0). */
function uint8Range(min: number, max: number): { scale: number; zeroPoint: number } {
  const lo = Math.min(min, 0);
  const hi = Math.max(max, 0);
  const scale = Math.fround((hi - lo) / 255 || 1);
  return { scale, zeroPoint: Math.round(-lo / scale) };
}

/** The float values of an initializer (raw little-endian or float_data). */
function floats(t: onnxProto.onnx.ITensorProto): Float32Array {
  if (t.rawData && t.rawData.byteLength > 0) {
    const copy = t.rawData.slice();
    return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
  }
  return Float32Array.from(t.floatData ?? []);
}

/**
 * The QDQ form of a float model; `calibration` are input feeds (name -> [dims, values]) run
 * through the float model to find each quantized activation's range.
 */
export async function quantizeQdq(
  bytes: Uint8Array,
  calibration: Record<string, { dims: number[]; data: Float32Array }>[],
): Promise<Uint8Array> {
  const model = onnx.ModelProto.decode(bytes);
  const graph = model.graph as Graph;
  const opset = Number(model.opsetImport?.find((o) => !o.domain)?.version ?? 0);
  if (opset < 10) throw new Error(`opset ${opset} has no QuantizeLinear`);
  const perChannel = opset >= 13;
  // Weights are initializers or Constant nodes (as Paddle exports them).
  const initializers = new Map([
    ...(graph.initializer ?? []).map((t) => [t.name ?? "", t] as const),
    ...(graph.node ?? []).flatMap((n) =>
      n.opType === "Constant" && n.attribute?.[0]?.t
        ? [[n.output![0], n.attribute[0].t] as const]
        : []
    ),
  ]);
  const convs = (graph.node ?? []).filter((n) => n.opType === "Conv");
  const activations = [
    ...new Set([
      ...convs.map((n) => n.input![0]),
      ...(graph.output ?? []).map((o) => o.name ?? ""),
    ]),
  ].filter((name) => !initializers.has(name));

  // Calibrate: the float model with every quantized activation as an output.
  const probe = onnx.ModelProto.decode(bytes);
  const probeGraph = probe.graph as Graph;
  const known = new Set((probeGraph.output ?? []).map((o) => o.name));
  for (const name of activations) {
    if (!known.has(name)) {
      probeGraph.output!.push({ name, type: { tensorType: { elemType: FLOAT } } });
    }
  }
  const session = await ort.InferenceSession.create(onnx.ModelProto.encode(probe).finish());
  const ranges = new Map(activations.map((name) => [name, { min: 0, max: 0 }]));
  try {
    for (const feeds of calibration) {
      const results = await session.run(Object.fromEntries(
        Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor("float32", v.data, v.dims)]),
      ));
      for (const name of activations) {
        const range = ranges.get(name)!;
        for (const v of results[name].data as Float32Array) {
          range.min = Math.min(range.min, v);
          range.max = Math.max(range.max, v);
        }
      }
    }
  } finally {
    await session.release();
  }

  const added: onnxProto.onnx.INodeProto[] = [];
  const scalar = (name: string, dataType: number, value: number) =>
    dataType === FLOAT
      ? { name, dims: [], dataType, floatData: [value] }
      : { name, dims: [], dataType, int32Data: [value] };
  /** x -> Q -> DQ named `${x}_qdq`. */
  const qdq = (x: string, into: string) => {
    const { scale, zeroPoint } = uint8Range(ranges.get(x)!.min, ranges.get(x)!.max);
    graph.initializer!.push(
      scalar(`${x}_scale`, FLOAT, scale),
      scalar(`${x}_zp`, UINT8, zeroPoint),
    );
    added.push(
      { opType: "QuantizeLinear", input: [x, `${x}_scale`, `${x}_zp`], output: [`${x}_q`] },
      { opType: "DequantizeLinear", input: [`${x}_q`, `${x}_scale`, `${x}_zp`], output: [into] },
    );
  };
  const nodes: onnxProto.onnx.INodeProto[] = [];
  const quantized = new Set<string>();
  for (const node of graph.node ?? []) {
    if (node.opType === "Conv") {
      const x = node.input![0];
      if (!quantized.has(x) && !initializers.has(x)) {
        qdq(x, `${x}_qdq`);
        nodes.push(...added.splice(0));
        quantized.add(x);
      }
      const w = initializers.get(node.input![1])!;
      const values = floats(w);
      // Per output channel needs opset 13's axis; before it, one scale for the tensor.
      const channels = perChannel ? Number(w.dims![0]) : 1;
      const inner = values.length / channels;
      const scales: number[] = [];
      const q = new Int8Array(values.length);
      for (let c = 0; c < channels; c++) {
        let peak = 0;
        for (let i = 0; i < inner; i++) peak = Math.max(peak, Math.abs(values[c * inner + i]));
        const scale = Math.fround(peak / 127 || 1);
        scales.push(scale);
        for (let i = 0; i < inner; i++) {
          q[c * inner + i] = Math.round(values[c * inner + i] / scale);
        }
      }
      const name = `${w.name}_quantized`;
      const dims = perChannel ? [channels] : [];
      graph.initializer!.push(
        { name: `${name}_q`, dims: w.dims, dataType: INT8, int32Data: Array.from(q) },
        { name: `${name}_scale`, dims, dataType: FLOAT, floatData: scales },
        { name: `${name}_zp`, dims, dataType: INT8, int32Data: scales.map(() => 0) },
      );
      nodes.push({
        opType: "DequantizeLinear",
        input: [`${name}_q`, `${name}_scale`, `${name}_zp`],
        output: [name],
        attribute: perChannel
          ? [{ name: "axis", type: onnx.AttributeProto.AttributeType.INT, i: 0 }]
          : [],
      });
      node.input = [quantized.has(x) ? `${x}_qdq` : x, name, ...node.input!.slice(2)];
    }
    nodes.push(node);
  }
  // Every graph output quantized too: the test compares within one output step.
  for (const output of graph.output ?? []) {
    const name = output.name ?? "";
    for (const node of nodes) {
      node.output = node.output!.map((o) => o === name ? `${name}_float` : o);
      node.input = node.input!.map((i) => i === name ? `${name}_float` : i);
    }
    ranges.set(`${name}_float`, ranges.get(name)!);
    qdq(`${name}_float`, name);
    nodes.push(...added.splice(0));
  }
  graph.node = nodes;
  return onnx.ModelProto.encode(model).finish();
}

/** One quantization step of each graph output of a QDQ model from {@link quantizeQdq}. */
export function outputSteps(bytes: Uint8Array): Record<string, number> {
  const graph = onnx.ModelProto.decode(bytes).graph as Graph;
  const scales = new Map((graph.initializer ?? []).map((t) => [t.name, t.floatData?.[0]]));
  return Object.fromEntries(
    (graph.output ?? []).map((o) => [o.name ?? "", scales.get(`${o.name}_float_scale`) ?? 0]),
  );
}
