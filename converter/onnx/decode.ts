/**
 * Reads an ONNX file with the `onnx-proto` package (protobufjs over the official onnx.proto):
 * no hand-written wire parser. Refuses what the converter cannot honour before any node is
 * looked at: bytes that are not a ModelProto, a missing graph, opsets outside 7-21, and
 * weights stored outside the file.
 */
import onnxProto from "onnx-proto";
import { fileFault } from "../errors.ts";

export const onnx = onnxProto.onnx;
export type ModelProto = onnxProto.onnx.IModelProto;
export type GraphProto = onnxProto.onnx.IGraphProto;
export type NodeProto = onnxProto.onnx.INodeProto;
export type TensorProto = onnxProto.onnx.ITensorProto;
export type AttributeProto = onnxProto.onnx.IAttributeProto;
export type ValueInfoProto = onnxProto.onnx.IValueInfoProto;

/** A repeated protobuf field (protobufjs types them nullable; absent means empty). */
export function list<T>(field: T[] | null | undefined): T[] {
  return field ?? [];
}

/** The opsets of the default ONNX domain the converter implements. */
export const MIN_OPSET = 7;
export const MAX_OPSET = 21;

/** An int64 field as protobufjs hands it over (a number or a Long). */
export type Int64 = number | { toNumber(): number };

/** An int64 as a JavaScript number (exact up to 2^53, which covers sizes and indexes). */
export function int64(value: Int64 | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return typeof value === "number" ? value : value.toNumber();
}

/** A decoded model and the opset of its default domain. */
export interface DecodedModel {
  model: ModelProto;
  graph: GraphProto;
  opset: number;
}

/** Decodes and checks an ONNX file. */
export function decodeOnnx(bytes: Uint8Array): DecodedModel {
  if (bytes.byteLength === 0) throw fileFault("the body is empty");
  let model: ModelProto;
  try {
    model = onnx.ModelProto.decode(bytes);
  } catch (error) {
    throw fileFault(
      `not a valid ONNX protobuf (${error instanceof Error ? error.message : error}); ` +
        "is the file truncated?",
    );
  }
  const graph = model.graph;
  if (!graph || (list(graph.node).length === 0 && list(graph.output).length === 0)) {
    throw fileFault("the file holds no graph (is it an ONNX model file?)");
  }
  const opset = defaultOpset(model);
  if (opset < MIN_OPSET || opset > MAX_OPSET) {
    throw fileFault(`opset ${opset} is outside the supported range ${MIN_OPSET}-${MAX_OPSET}`);
  }
  for (const tensor of list(graph.initializer)) {
    if (tensor.dataLocation === onnx.TensorProto.DataLocation.EXTERNAL) {
      throw fileFault(
        `initializer '${tensor.name}' keeps its data in an external file; save the model ` +
          "with its weights inside the file (onnx.save_model(..., save_as_external_data=False))",
      );
    }
  }
  return { model, graph, opset };
}

function defaultOpset(model: ModelProto): number {
  const entry = list(model.opsetImport).find((o) => !o.domain || o.domain === "ai.onnx");
  if (!entry) throw fileFault("the model imports no opset of the default ONNX domain");
  return int64(entry.version as Int64);
}
