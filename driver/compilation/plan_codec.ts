/**
 * The compilation cache's two payloads for a prepared model. The model cache is the plan
 * as JSON — schedule, kernel inputs, arena layout, packed-weight references — with the small
 * constants (scalars, shape tensors: everything that steers control flow) inlined; the cache
 * accepts it only when its SHA-256 matches what this service recorded. The data cache is the
 * weights buffer (CONSTANT_REFERENCE tensors and packed weights) as raw bytes: as in NNAPI it
 * is not hash-checked, only its size is (recorded in the protected model cache), so a
 * tampered data cache can at worst change output values, never the plan.
 */
import { HOST_DEVICES } from "../devices/device_list.ts";
import type { PreparedModel } from "./plan.ts";

/**
 * Format of the model cache; part of the driver version, so a change resets the cache. 5:
 * weights are packed whatever extents are known only at execution, and each plan step says
 * when its kernels bind (`binds`). 4:
 * every preference's plan minimises latency (plans written when SUSTAINED_SPEED balanced
 * load over devices, objective "throughput", must not be found).
 */
export const PLAN_FORMAT = 6;

/**
 * The driver version the compilation cache is bound to: a change of plan format or of a
 * device's version resets the cache map, so caches written by another build are never used.
 */
export const DRIVER_VERSION = `nnserve/plan-${PLAN_FORMAT}/${
  HOST_DEVICES.map((d) => `${d.info.name}@${d.info.version}`).join("+")
}`;

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

/** A plan decoded from a verified model cache whose weights are still in the data cache. */
export interface DecodedModelCache {
  plan: Omit<PreparedModel, "weights">;
  /** Byte size the weights must have. */
  weightBytes: number;
}

/** Decodes a verified model cache; the weights come separately ({@link attachWeights}). */
export function decodePlan(model: Uint8Array): DecodedModelCache {
  const { header, plan } = JSON.parse(new TextDecoder().decode(model)) as {
    header: PlanHeader;
    plan: Omit<PreparedModel, "smallConstants" | "weights">;
  };
  if (header?.format !== PLAN_FORMAT) throw new Error("unknown plan format");
  const small = Uint8Array.fromBase64(header.smallConstants);
  return {
    plan: { ...plan, smallConstants: copyToShared(small) },
    weightBytes: header.weightBytes,
  };
}

/** Completes a decoded plan with its weights; throws when they do not belong together. */
export function attachWeights(decoded: DecodedModelCache, data: Uint8Array): PreparedModel {
  if (decoded.weightBytes !== data.byteLength) {
    throw new Error(
      `data cache has ${data.byteLength} bytes, the plan expects ${decoded.weightBytes}`,
    );
  }
  const weights = data.buffer instanceof SharedArrayBuffer && data.byteOffset === 0 &&
      data.byteLength === data.buffer.byteLength
    ? data.buffer
    : copyToShared(data);
  return { ...decoded.plan, weights };
}

function copyToShared(bytes: Uint8Array): SharedArrayBuffer {
  const shared = new SharedArrayBuffer(bytes.byteLength);
  new Uint8Array(shared).set(bytes);
  return shared;
}
