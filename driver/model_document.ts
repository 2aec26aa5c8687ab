/**
 * The canonical stored form of a registered model: a JSON document (structure, small
 * CONSTANT_COPY values as base64) plus one binary weights blob holding every
 * CONSTANT_REFERENCE operand (large weights never pass through JSON or KV). In the document
 * those operands carry `location` into pool 0, which is the weights blob. Key order is fixed,
 * so the bytes are stable and their SHA-256 is the model's checksum.
 */
import type { Model } from "./model.ts";
import type { ModelJson } from "./model_schema.ts";
import { toBytes } from "../nnapi/tensor.ts";

/** The pool name standing for the model's own weights blob in a stored document. */
export const WEIGHTS_POOL = "weights";

/** The two parts of a stored model. */
export interface ModelDocument {
  document: Uint8Array;
  weights: Uint8Array;
}

const WEIGHT_ALIGNMENT = 64;

/** Serializes a validated model (with the dimensions the client declared) canonically. */
export function canonicalDocument(json: ModelJson, model: Model): ModelDocument {
  let weightsSize = 0;
  const locations = model.operands.map((operand) => {
    if (operand.lifetime !== "CONSTANT_REFERENCE" || !operand.value) return undefined;
    const offset = weightsSize;
    weightsSize = Math.ceil((offset + operand.value.byteLength) / WEIGHT_ALIGNMENT) *
      WEIGHT_ALIGNMENT;
    return { poolIndex: 0, offset, length: operand.value.byteLength };
  });
  const weights = new Uint8Array(weightsSize);
  const document = {
    operands: json.operands.map((operand, i) => {
      const value = model.operands[i].value;
      const location = locations[i];
      if (location && value) weights.set(toBytes(value), location.offset);
      return {
        type: operand.type,
        dimensions: operand.dimensions,
        scale: operand.scale,
        zeroPoint: operand.zeroPoint,
        lifetime: operand.lifetime,
        ...(location
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
    relaxComputationFloat32toFloat16: json.relaxComputationFloat32toFloat16,
    ...(weightsSize > 0 ? { pools: [WEIGHTS_POOL] } : {}),
  };
  return { document: new TextEncoder().encode(JSON.stringify(document)), weights };
}
