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
 * Format of the model cache; part of the driver version, so a change resets the cache. 7:
 * the JSON's length first, the device units' artifacts after it. 5:
 * weights are packed whatever extents are known only at execution, and each plan step says
 * when its kernels bind (`binds`). 4:
 * every preference's plan minimises latency (plans written when SUSTAINED_SPEED balanced
 * load over devices, objective "throughput", must not be found).
 */
export const PLAN_FORMAT = 7;

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
  /** The device units' artifacts after the JSON, in this order: their steps and sizes. */
  artifacts: { step: number; bytes: number }[];
}

/**
 * Serializes a plan into model cache and data cache bytes. The model cache is the JSON's
 * byte length (4 bytes, little-endian), the JSON, then the device units' artifacts (an
 * onnxruntime unit's optimized model: what a device runs, so hashed with the plan).
 */
export function encodePlan(prepared: PreparedModel): { model: Uint8Array; data: Uint8Array } {
  const { smallConstants, weights, unitArtifacts = [], ...plan } = prepared;
  const header: PlanHeader = {
    format: PLAN_FORMAT,
    weightBytes: weights.byteLength,
    smallConstants: new Uint8Array(smallConstants).slice().toBase64(),
    artifacts: unitArtifacts.map((a) => ({ step: a.step, bytes: a.bytes.byteLength })),
  };
  const json = new TextEncoder().encode(JSON.stringify({ header, plan }));
  const total = 4 + json.byteLength + unitArtifacts.reduce((n, a) => n + a.bytes.byteLength, 0);
  const model = new Uint8Array(total);
  new DataView(model.buffer).setUint32(0, json.byteLength, true);
  model.set(json, 4);
  let at = 4 + json.byteLength;
  for (const artifact of unitArtifacts) {
    model.set(artifact.bytes, at);
    at += artifact.bytes.byteLength;
  }
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
  if (model.byteLength < 4) throw new Error("the model cache is too short");
  const jsonBytes = new DataView(model.buffer, model.byteOffset, 4).getUint32(0, true);
  if (4 + jsonBytes > model.byteLength) throw new Error("the model cache is too short");
  const { header, plan } = JSON.parse(
    new TextDecoder().decode(model.subarray(4, 4 + jsonBytes)),
  ) as {
    header: PlanHeader;
    plan: Omit<PreparedModel, "smallConstants" | "weights" | "unitArtifacts">;
  };
  if (header?.format !== PLAN_FORMAT) throw new Error("unknown plan format");
  const small = Uint8Array.fromBase64(header.smallConstants);
  let at = 4 + jsonBytes;
  const unitArtifacts = header.artifacts.map(({ step, bytes }) => {
    if (at + bytes > model.byteLength) throw new Error("the model cache is too short");
    const artifact = { step, bytes: sharedBytes(model.subarray(at, at + bytes)) };
    at += bytes;
    return artifact;
  });
  if (at !== model.byteLength) throw new Error("the model cache has bytes past its artifacts");
  return {
    plan: {
      ...plan,
      smallConstants: copyToShared(small),
      ...(unitArtifacts.length > 0 ? { unitArtifacts } : {}),
    },
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

/**
 * A unit artifact's bytes in shared memory: every executor reads the plan's one copy (they
 * are never written).
 */
export function sharedBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(copyToShared(bytes));
}

function copyToShared(bytes: Uint8Array): SharedArrayBuffer {
  const shared = new SharedArrayBuffer(bytes.byteLength);
  new Uint8Array(shared).set(bytes);
  return shared;
}
