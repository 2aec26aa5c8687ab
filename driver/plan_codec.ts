/**
 * The compilation cache's two payloads for a prepared model. The model cache is the plan
 * as JSON — schedule, kernel inputs, arena layout, packed-weight references — with the small
 * constants (scalars, shape tensors: everything that steers control flow) inlined; the cache
 * accepts it only when its SHA-256 matches what this service recorded. The data cache is the
 * weights buffer (CONSTANT_REFERENCE tensors and packed weights) as raw bytes: as in NNAPI it
 * is not hash-checked, only its size is (recorded in the protected model cache), so a
 * tampered data cache can at worst change output values, never the plan.
 */
import type { PreparedModel } from "./prepared_model.ts";

/** Format of the model cache; part of the driver version. */
export const PLAN_FORMAT = 2;

interface PlanHeader {
  format: number;
  weightBytes: number;
  smallConstants: string;
}

/** Serializes a plan into model cache and data cache bytes. */
export function encodePlan(prepared: PreparedModel): { model: Uint8Array; data: Uint8Array } {
  const { smallConstants, weights, ...plan } = prepared;
  const header: PlanHeader = {
    format: PLAN_FORMAT,
    weightBytes: weights.byteLength,
    smallConstants: new Uint8Array(smallConstants).slice().toBase64(),
  };
  const model = new TextEncoder().encode(JSON.stringify({ header, plan }));
  const data = new Uint8Array(weights.byteLength);
  data.set(new Uint8Array(weights));
  return { model, data };
}

/**
 * Rebuilds a plan from a verified model cache and the data cache bytes (ideally already in
 * shared memory, then used without a copy); throws when the two do not belong together.
 */
export function decodePlan(model: Uint8Array, data: Uint8Array): PreparedModel {
  const { header, plan } = JSON.parse(new TextDecoder().decode(model)) as {
    header: PlanHeader;
    plan: Omit<PreparedModel, "smallConstants" | "weights">;
  };
  if (header?.format !== PLAN_FORMAT) throw new Error("unknown plan format");
  if (header.weightBytes !== data.byteLength) {
    throw new Error(
      `data cache has ${data.byteLength} bytes, the plan expects ${header.weightBytes}`,
    );
  }
  const small = Uint8Array.fromBase64(header.smallConstants);
  const smallConstants = new SharedArrayBuffer(small.byteLength);
  new Uint8Array(smallConstants).set(small);
  const weights = data.buffer instanceof SharedArrayBuffer && data.byteOffset === 0 &&
      data.byteLength === data.buffer.byteLength
    ? data.buffer
    : copyToShared(data);
  return { ...plan, smallConstants, weights };
}

function copyToShared(bytes: Uint8Array): SharedArrayBuffer {
  const shared = new SharedArrayBuffer(bytes.byteLength);
  new Uint8Array(shared).set(bytes);
  return shared;
}
