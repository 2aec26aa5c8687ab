/**
 * The canonical document of a registered model: the wire format with every constant
 * inlined as base64 (pool references resolved), in a fixed key order, so that its bytes
 * are stable and its SHA-256 is the model's checksum.
 */
import type { Model } from "./model.ts";
import type { ModelJson } from "./model_schema.ts";
import { toBytes } from "./tensor.ts";

/** Serializes a validated model (with the dimensions the client declared) canonically. */
export function canonicalDocument(json: ModelJson, model: Model): Uint8Array {
  const document = {
    operands: json.operands.map((operand, i) => {
      const value = model.operands[i].value;
      return {
        type: operand.type,
        dimensions: operand.dimensions,
        scale: operand.scale,
        zeroPoint: operand.zeroPoint,
        lifetime: operand.lifetime,
        ...(value ? { value: { base64: toBytes(value).toBase64() } } : {}),
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
  };
  return new TextEncoder().encode(JSON.stringify(document));
}
