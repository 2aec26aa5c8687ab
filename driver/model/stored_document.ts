/**
 * The canonical stored form of a registered model: a JSON document (structure, small
 * CONSTANT_COPY values as base64) plus one binary weights blob holding every
 * CONSTANT_REFERENCE operand (large weights never pass through JSON or KV). In the document
 * those operands carry `location` into pool 0, which is the weights blob. Key order is fixed,
 * so the bytes are stable and their SHA-256 is the model's checksum.
 */
import type { Model, Operand, Subgraph } from "./model.ts";
import type { GraphJson, ModelJson } from "./model_schema.ts";
import { toBytes } from "../../nnapi/tensor.ts";

/** The pool name standing for the model's own weights blob in a stored document. */
export const WEIGHTS_POOL = "weights";

/** The two parts of a stored model. */
export interface ModelDocument {
  document: Uint8Array;
  weights: Uint8Array;
}

const WEIGHT_ALIGNMENT = 64;

/**
 * Serializes a validated model (with the dimensions the client declared) canonically. The
 * weights of every graph share the one blob; `referenced` appears only when the model has
 * referenced subgraphs, so a model without them is stored exactly as before they existed.
 */
export function canonicalDocument(json: ModelJson, model: Model): ModelDocument {
  let weightsSize = 0;
  const locate = (operand: Operand) => {
    if (operand.lifetime !== "CONSTANT_REFERENCE" || !operand.value) return undefined;
    const offset = weightsSize;
    weightsSize = Math.ceil((offset + operand.value.byteLength) / WEIGHT_ALIGNMENT) *
      WEIGHT_ALIGNMENT;
    return { operand, location: { poolIndex: 0, offset, length: operand.value.byteLength } };
  };
  const graphs = [
    { json: json as GraphJson, graph: model as Subgraph },
    ...model.referenced.map((graph, k) => ({ json: json.referenced![k], graph })),
  ];
  const locations = graphs.map(({ graph }) => graph.operands.map(locate));
  const weights = new Uint8Array(weightsSize);
  for (const placed of locations.flat()) {
    if (placed) weights.set(toBytes(placed.operand.value!), placed.location.offset);
  }
  const documentOf = ({ json, graph }: typeof graphs[number], g: number) => ({
    operands: json.operands.map((operand, i) => {
      const value = graph.operands[i].value;
      const location = locations[g][i]?.location;
      return {
        type: operand.type,
        dimensions: operand.dimensions,
        scale: operand.scale,
        zeroPoint: operand.zeroPoint,
        lifetime: operand.lifetime,
        ...(operand.lifetime === "SUBGRAPH"
          ? { subgraph: operand.subgraph }
          : location
          ? { location }
          : value
          ? { value: { base64: toBytes(value).toBase64() } }
          : {}),
        ...(operand.channelQuant ? { channelQuant: operand.channelQuant } : {}),
      };
    }),
    operations: json.operations.map((op) => ({
      type: op.type,
      inputs: op.inputs,
      outputs: op.outputs,
    })),
    inputIndexes: json.inputIndexes,
    outputIndexes: json.outputIndexes,
  });
  const [main, ...referenced] = graphs.map(documentOf);
  const document = {
    ...main,
    relaxComputationFloat32toFloat16: json.relaxComputationFloat32toFloat16,
    ...(referenced.length > 0 ? { referenced } : {}),
    ...(weightsSize > 0 ? { pools: [WEIGHTS_POOL] } : {}),
  };
  return { document: new TextEncoder().encode(JSON.stringify(document)), weights };
}

/**
 * The stored document as a self-contained wire model (`GET /v1/models/{id}?view=model`):
 * every weight that lives in the weights blob is inlined as base64, so the JSON registers
 * again as it is.
 */
export function inlineDocument(stored: ModelDocument): ModelJson {
  const json = JSON.parse(new TextDecoder().decode(stored.document)) as ModelJson;
  const inline = (graph: Pick<ModelJson, "operands">) => {
    graph.operands = graph.operands.map((operand) => {
      if (!operand.location) return operand;
      const { offset, length } = operand.location;
      const { location: _location, ...rest } = operand;
      return {
        ...rest,
        value: { base64: stored.weights.subarray(offset, offset + length).toBase64() },
      };
    });
  };
  inline(json);
  for (const graph of json.referenced ?? []) inline(graph);
  delete json.pools;
  return json;
}
