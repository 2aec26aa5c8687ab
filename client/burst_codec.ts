/**
 * What a `Burst` puts on the wire and takes off it: the SDK's inputs and output descriptions
 * turned into the arguments of an EXECUTE frame (`burst_frames.ts`), and a RESULT frame
 * turned into typed outputs or an `NnapiError`, by the model's signature.
 *
 * Everything here is checked and copied before the frame leaves, so the caller may reuse
 * its arrays at once and a malformed request throws before anything is sent.
 */
import {
  type BurstArgument,
  type BurstResult,
  encodeRequest,
  NO_BYTES,
  NO_DIMENSIONS,
} from "./burst_frames.ts";
import { copyDimensions, type ExecutionOutput, type ExecutionResult } from "./execution.ts";
import { NnapiError } from "./http.ts";
import { fromLittleEndian, littleEndianBytes, type TensorValues, toTensorArray } from "./tensor.ts";
import type { ModelSignature, OperandType, OutputShape } from "./types.ts";

/** A region of the memory mapped to a slot: `length` bytes from `offset`. */
export interface SlotRegion {
  /** The slot number a memory was given with `Burst.setSlot` / `mapMemory`. */
  slot: number;
  /** First byte of the region in that memory. */
  offset: number;
  /** Bytes in the region. */
  length: number;
  /** Completes an operand whose model dimensions are not fully known. */
  dimensions?: readonly number[];
}

/** Inline tensor data with dimensions completing the operand's. */
export interface BurstTensor {
  /** The values, converted to the operand's type; a number is a scalar. */
  data: TensorValues | number;
  /** The operand's full dimensions for this request. */
  dimensions: readonly number[];
}

/**
 * One input of a burst request, in model input order: values (converted to the operand's
 * type, a number being a scalar), a slot region, or `null` for an omitted optional input.
 */
export type BurstInput = TensorValues | number | null | SlotRegion | BurstTensor;

/**
 * One output of a burst request: returned inline (optionally with expected dimensions) or
 * written into a slot region (then returned with dimensions only).
 */
export type BurstOutput = SlotRegion | { dimensions?: readonly number[] } | undefined;

/** Options of one burst request. */
export interface BurstComputeOptions {
  /** Asks for on-device and in-driver durations (`ExecutionResult.timing`). */
  measureTiming?: boolean;
  /** Fails with MISSED_DEADLINE_* when the request takes longer (counted from its receipt). */
  deadlineMs?: number;
  /** Per output (model order); outputs not described come back inline. */
  outputs?: readonly BurstOutput[];
}

/** Largest value of the frame's 32-bit fields (ids, slots, offsets, dimensions, deadlines). */
export const MAX_UINT32 = 0xffffffff;

/** An EXECUTE frame ready to send, and what decoding its RESULT needs. */
export interface EncodedRequest {
  id: number;
  frame: Uint8Array<ArrayBuffer>;
  /** Per output: written to a slot, so its result carries no data. */
  inSlot: boolean[];
}

function isSlotRegion(value: object): value is SlotRegion {
  return "slot" in value;
}

function checkUint32(what: string, name: string, n: number): void {
  if (!Number.isInteger(n) || n < 0 || n > MAX_UINT32) {
    throw new RangeError(`${what}: ${name} ${n} is not an integer in [0, 2^32)`);
  }
}

/** Throws a RangeError naming `what` unless `slot` fits the frame's 32-bit slot field. */
export function checkSlot(what: string, slot: number): void {
  checkUint32(what, "slot", slot);
}

function checkDimensions(what: string, dimensions: readonly number[] | undefined): void {
  if (dimensions === undefined) return;
  if (dimensions.length >= NO_DIMENSIONS) {
    throw new RangeError(`${what}: rank ${dimensions.length} is too large for a burst frame`);
  }
  for (const d of dimensions) checkUint32(what, "dimension", d);
}

function slotArgument(what: string, region: SlotRegion): BurstArgument {
  checkSlot(what, region.slot);
  checkUint32(what, "offset", region.offset);
  checkUint32(what, "length", region.length);
  checkDimensions(what, region.dimensions);
  return {
    kind: "slot",
    slot: region.slot,
    offset: region.offset,
    length: region.length,
    ...copyDimensions(region.dimensions),
  };
}

function inputArgument(type: OperandType, index: number, input: BurstInput): BurstArgument {
  const what = `input ${index}`;
  if (input === null) return { kind: "omitted" };
  if (typeof input === "number") {
    return { kind: "inline", bytes: littleEndianBytes(toTensorArray(type, [input])) };
  }
  if (Array.isArray(input) || ArrayBuffer.isView(input)) {
    return { kind: "inline", bytes: littleEndianBytes(toTensorArray(type, input as TensorValues)) };
  }
  if (isSlotRegion(input)) return slotArgument(what, input);
  const tensor = input as BurstTensor;
  checkDimensions(what, tensor.dimensions);
  const values = typeof tensor.data === "number" ? [tensor.data] : tensor.data;
  return {
    kind: "inline",
    bytes: littleEndianBytes(toTensorArray(type, values)),
    dimensions: [...tensor.dimensions],
  };
}

function outputArgument(index: number, output: BurstOutput): BurstArgument {
  if (output !== undefined && isSlotRegion(output)) return slotArgument(`output ${index}`, output);
  checkDimensions(`output ${index}`, output?.dimensions);
  return { kind: "inline", bytes: NO_BYTES, ...copyDimensions(output?.dimensions) };
}

/** The request's deadline in the frame's microseconds (0: none), checked. */
function deadlineUs(deadlineMs: number | undefined): number {
  if (deadlineMs === undefined) return 0;
  if (!(deadlineMs >= 0)) {
    throw new RangeError(`deadlineMs ${deadlineMs} is not a non-negative number`);
  }
  return Math.min(MAX_UINT32, Math.max(1, Math.round(deadlineMs * 1000)));
}

/**
 * Encodes one `Burst.compute` call as an EXECUTE frame of the model `signature`. The id is
 * taken from `nextId` only once the counts and the deadline are found valid; a bad argument
 * throws (RangeError) instead of being left to the service.
 */
export function encodeCompute(
  signature: ModelSignature,
  inputs: readonly BurstInput[],
  options: BurstComputeOptions & { nextId: () => number },
): EncodedRequest {
  if (inputs.length !== signature.inputs.length) {
    throw new RangeError(
      `the model has ${signature.inputs.length} inputs; ${inputs.length} were given`,
    );
  }
  const outputs = options.outputs ?? [];
  if (outputs.length > signature.outputs.length) {
    throw new RangeError(
      `the model has ${signature.outputs.length} outputs; ${outputs.length} were described`,
    );
  }
  const deadline = deadlineUs(options.deadlineMs);
  const id = options.nextId();
  const described = outputs.some((o) => o !== undefined);
  const frame = encodeRequest({
    id,
    measureTiming: options.measureTiming ?? false,
    deadlineUs: deadline,
    inputs: inputs.map((input, i) => inputArgument(signature.inputs[i].type, i, input)),
    outputs: described ? signature.outputs.map((_, k) => outputArgument(k, outputs[k])) : [],
  });
  return {
    id,
    frame,
    inSlot: signature.outputs.map((_, k) => {
      const output = outputs[k];
      return output !== undefined && isSlotRegion(output);
    }),
  };
}

function outputShapesOf(result: BurstResult): OutputShape[] {
  return result.outputs.map((o) => ({ dimensions: o.dimensions, isSufficient: o.isSufficient }));
}

/**
 * The error a RESULT frame rejects its request with (undefined when it succeeded): its
 * status and message, with the output shapes when it has them (OUTPUT_INSUFFICIENT_SIZE).
 * `httpStatus` is 0: there is no HTTP exchange.
 */
export function resultError(result: BurstResult): NnapiError | undefined {
  const { status } = result;
  if (status === "NONE") return undefined;
  return new NnapiError(status, 0, result.message || `burst request failed`, {
    body: {
      status,
      message: result.message,
      requestId: result.id,
      ...(result.outputs.length > 0 ? { outputShapes: outputShapesOf(result) } : {}),
    },
  });
}

/**
 * The typed outputs of a successful RESULT frame, in the model's output types; outputs
 * flagged in `inSlot` come back with dimensions only. An output the model lacks throws
 * NnapiError GENERAL_FAILURE.
 */
export function decodeCompute(
  signature: ModelSignature,
  result: BurstResult,
  request: Pick<EncodedRequest, "inSlot">,
): ExecutionResult {
  const outputs = result.outputs.map((output, k): ExecutionOutput => {
    const type = signature.outputs[k]?.type;
    if (type === undefined) {
      throw new NnapiError(
        "GENERAL_FAILURE",
        0,
        `the service returned output ${k}; the model has ${signature.outputs.length}`,
      );
    }
    if (request.inSlot[k]) return { dimensions: output.dimensions };
    return { dimensions: output.dimensions, data: fromLittleEndian(type, output.bytes) };
  });
  return {
    outputs,
    outputShapes: outputShapesOf(result),
    ...(result.timing ? { timing: result.timing } : {}),
  };
}
