/**
 * The compilation cache's two payloads for a prepared model: the model cache (the plan as
 * JSON: schedule, kernel inputs, packed-weight references, arena layout) and the data cache
 * (the constant buffer: weights as packed at preparation). Decoding trusts the plan's
 * structure — the cache only hands over bytes whose SHA-256 matches what this service
 * recorded — but still checks that both halves belong together.
 */
import type { PreparedModel } from "./prepared_model.ts";

/** Format of the model cache; part of the driver version. */
export const PLAN_FORMAT = 1;

interface PlanHeader {
  format: number;
  dataBytes: number;
}

/** Serializes a plan into model cache and data cache bytes. */
export function encodePlan(prepared: PreparedModel): { model: Uint8Array; data: Uint8Array } {
  const { constants, ...plan } = prepared;
  const header: PlanHeader = { format: PLAN_FORMAT, dataBytes: constants.byteLength };
  const model = new TextEncoder().encode(JSON.stringify({ header, plan }));
  const data = new Uint8Array(constants.byteLength);
  data.set(new Uint8Array(constants));
  return { model, data };
}

/** Rebuilds a plan; throws when the payloads do not belong together. */
export function decodePlan(model: Uint8Array, data: Uint8Array): PreparedModel {
  const { header, plan } = JSON.parse(new TextDecoder().decode(model)) as {
    header: PlanHeader;
    plan: Omit<PreparedModel, "constants">;
  };
  if (header?.format !== PLAN_FORMAT) throw new Error("unknown plan format");
  if (header.dataBytes !== data.byteLength) {
    throw new Error(`data cache has ${data.byteLength} bytes, the plan expects ${header.dataBytes}`);
  }
  const constants = new SharedArrayBuffer(data.byteLength);
  new Uint8Array(constants).set(data);
  return { ...plan, constants };
}
