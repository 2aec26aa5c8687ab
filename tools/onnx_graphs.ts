/**
 * Small ONNX graphs built in tests and benchmarks with `onnx-proto`, seeded inputs, and the tolerance the
 * converter must meet against onnxruntime-node (tools/onnx_compare.ts runs both).
 */
import onnxProto from "onnx-proto";
import { seededFloats } from "../kernels/seeded_random.ts";

export const { onnx } = onnxProto;
export const FLOAT = onnx.TensorProto.DataType.FLOAT;
export const INT64 = onnx.TensorProto.DataType.INT64;
export const INT8 = onnx.TensorProto.DataType.INT8;
export const UINT8 = onnx.TensorProto.DataType.UINT8;

/** A graph input or output: name, element type and dims (strings are symbolic). */
export interface ValueSpec {
  name: string;
  dims: (number | string)[];
  type?: number;
  /** A sequence of such tensors (a Loop body's carried sequence). */
  sequence?: boolean;
}

/** An attribute value: a number (int unless `float` is set), number list, string, float tensor or graph. */
export type AttributeValue =
  | number
  | { float: number }
  | number[]
  | { floats: number[] }
  | string
  | { strings: string[] }
  | { tensor: { dims: number[]; values: number[] } }
  | { graph: Omit<GraphSpec, "opset"> };

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  attributes?: Record<string, AttributeValue>;
  name?: string;
}

/** A branch of an If: the nodes and the one output they give (branches read outer values). */
export interface BranchSpec {
  output: ValueSpec;
  nodes: NodeSpec[];
}

/** An If node on `condition` whose branches each give one value, named `output` here. */
export function ifNode(
  condition: string,
  output: string,
  thenBranch: BranchSpec,
  elseBranch: BranchSpec,
  name?: string,
): NodeSpec {
  const graph = (branch: BranchSpec) => ({
    graph: { inputs: [], outputs: [branch.output], nodes: branch.nodes },
  });
  return {
    op: "If",
    inputs: [condition],
    outputs: [output],
    attributes: { then_branch: graph(thenBranch), else_branch: graph(elseBranch) },
    ...(name ? { name } : {}),
  };
}

export interface GraphSpec {
  inputs: ValueSpec[];
  outputs: ValueSpec[];
  nodes: NodeSpec[];
  /** Constant float32 (or int64 with `int64: true`) initializers. */
  initializers?: {
    name: string;
    dims: number[];
    values: ArrayLike<number>;
    int64?: boolean;
    /** An ONNX data type code for 8-bit integers (values travel in int32_data). */
    dataType?: number;
  }[];
  opset?: number;
}

const A = onnx.AttributeProto.AttributeType;

function attribute(name: string, value: AttributeValue): onnxProto.onnx.IAttributeProto {
  if (typeof value === "number") return { name, type: A.INT, i: value };
  if (typeof value === "string") {
    return { name, type: A.STRING, s: new TextEncoder().encode(value) };
  }
  if (Array.isArray(value)) return { name, type: A.INTS, ints: value };
  if ("float" in value) return { name, type: A.FLOAT, f: value.float };
  if ("graph" in value) return { name, type: A.GRAPH, g: graphProto(value.graph) };
  if ("tensor" in value) {
    const { dims, values } = value.tensor;
    return { name, type: A.TENSOR, t: { dims, dataType: FLOAT, floatData: values } };
  }
  if ("strings" in value) {
    return {
      name,
      type: A.STRINGS,
      strings: value.strings.map((t) => new TextEncoder().encode(t)),
    };
  }
  return { name, type: A.FLOATS, floats: value.floats };
}

function valueInfo(v: ValueSpec) {
  const tensorType = {
    elemType: v.type ?? FLOAT,
    shape: {
      dim: v.dims.map((d) => typeof d === "number" ? { dimValue: d } : { dimParam: d }),
    },
  };
  return {
    name: v.name,
    type: v.sequence ? { sequenceType: { elemType: { tensorType } } } : { tensorType },
  };
}

/** The GraphProto fields of a graph (the model's, or a branch's). */
function graphProto(spec: Omit<GraphSpec, "opset">): onnxProto.onnx.IGraphProto {
  return {
    name: "test",
    node: spec.nodes.map((n, i) => ({
      name: n.name ?? `${n.op}_${i}`,
      opType: n.op,
      input: n.inputs,
      output: n.outputs,
      attribute: Object.entries(n.attributes ?? {}).map(([k, v]) => attribute(k, v)),
    })),
    initializer: (spec.initializers ?? []).map((t) =>
      t.dataType !== undefined
        ? { name: t.name, dims: t.dims, dataType: t.dataType, int32Data: Array.from(t.values) }
        : t.int64
        ? { name: t.name, dims: t.dims, dataType: INT64, int64Data: Array.from(t.values) }
        : { name: t.name, dims: t.dims, dataType: FLOAT, floatData: Array.from(t.values) }
    ),
    input: spec.inputs.map(valueInfo),
    output: spec.outputs.map(valueInfo),
  };
}

/** The ONNX file bytes of a graph. */
export function onnxBytes(spec: GraphSpec): Uint8Array {
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: "nnserve-tests",
    opsetImport: [{ domain: "", version: spec.opset ?? 13 }],
    graph: graphProto(spec),
  });
  return onnx.ModelProto.encode(model).finish();
}

/**
 * An ONNX file whose graph outputs are `outputs` (any values the graph computes, with their
 * ONNX element types) instead of its own: intermediate values to compare.
 */
export function withOutputs(
  bytes: Uint8Array,
  outputs: readonly { name: string; type: number }[],
): Uint8Array {
  const model = onnx.ModelProto.decode(bytes);
  model.graph!.output = outputs.map(({ name, type }) =>
    onnx.ValueInfoProto.create({ name, type: { tensorType: { elemType: type } } })
  );
  return onnx.ModelProto.encode(model).finish();
}

/** A constant of a graph (see {@link GraphSpec.initializers}). */
export type Initializer = NonNullable<GraphSpec["initializers"]>[number];

/** Seeded 8-bit integers of ONNX type `type` (UINT8: 0..254, INT8: -127..127). */
export function seededIntegers(
  name: string,
  dims: number[],
  seed: number,
  type: number,
): Initializer {
  const values = Array.from(
    seeded(dims, seed),
    (v) => type === UINT8 ? Math.floor((v + 1) * 127.5) : Math.round(v * 127),
  );
  return { name, dims, values, dataType: type };
}

/** Seeded float32 values for a shape. */
export function seeded(dims: number[], seed: number, scale = 2): Float32Array {
  return seededFloats(dims.reduce((a, b) => a * b, 1), seed, scale);
}

/** Throws unless every value is within `absolute` (1e-4) or 1e-3 relative of the oracle. */
export function assertClose(
  actual: readonly number[],
  expected: readonly number[],
  what: string,
  absolute = 1e-4,
) {
  if (actual.length !== expected.length) {
    throw new Error(`${what}: ${actual.length} values, expected ${expected.length}`);
  }
  for (let i = 0; i < actual.length; i++) {
    const diff = Math.abs(actual[i] - expected[i]);
    if (!(diff <= absolute || diff <= 1e-3 * Math.abs(expected[i]))) {
      throw new Error(`${what}[${i}]: ${actual[i]}, onnxruntime says ${expected[i]}`);
    }
  }
}
