/**
 * Operand validation (NNAPI's per-type rules on dimensions, scale, zero point, per-channel
 * parameters and lifetimes) and decoding of constant values from JSON numbers, base64 or
 * memory-pool locations into typed arrays.
 */
import { invalid } from "../../nnapi/errors.ts";
import type { Operand, PoolResolver } from "./model.ts";
import type { GraphJson, OperandJson } from "./model_schema.ts";
import {
  elementBytes,
  elementCount,
  fromBytes,
  fromCheckedNumbers,
  isFullySpecified,
  isScalarType,
  MAX_TENSOR_BYTES,
  misfitReason,
  type TensorData,
} from "../../nnapi/tensor.ts";
import type { HalVersion, Lifetime, OperandType } from "../../nnapi/types.ts";

const CONSTANT_LIFETIMES: ReadonlySet<Lifetime> = new Set(["CONSTANT_COPY", "CONSTANT_REFERENCE"]);

/** Throws INVALID_ARGUMENT with a path into the model. */
export function fail(message: string, path: (string | number)[]): never {
  throw invalid(message, { path });
}

/** The HAL version an operand type needs. */
export function operandVersion(type: OperandType): HalVersion {
  switch (type) {
    case "FLOAT16":
    case "BOOL":
    case "TENSOR_FLOAT16":
    case "TENSOR_BOOL8":
    case "TENSOR_QUANT8_SYMM":
    case "TENSOR_QUANT8_SYMM_PER_CHANNEL":
    case "TENSOR_QUANT16_ASYMM":
    case "TENSOR_QUANT16_SYMM":
      return "V1_2";
    case "TENSOR_QUANT8_ASYMM_SIGNED":
    case "SUBGRAPH":
      return "V1_3";
    default:
      return "V1_0";
  }
}

/** NNAPI's per-type rules on dimensions, scale, zero point and per-channel parameters. */
function validateOperandType(operand: OperandJson, i: number): void {
  const path = ["operands", i];
  const at = `operand ${i} (${operand.type})`;
  const { type, scale, zeroPoint } = operand;
  if (isScalarType(type) && operand.dimensions.length !== 0) {
    fail(`${at}: a scalar must have dimensions [], got [${operand.dimensions}]`, [
      ...path,
      "dimensions",
    ]);
  }
  const bytes = elementCount(operand.dimensions) * elementBytes(type);
  if (bytes > MAX_TENSOR_BYTES) {
    fail(`${at}: dimensions [${operand.dimensions}] need ${bytes} bytes, over the limit`, [
      ...path,
      "dimensions",
    ]);
  }
  const needsScale = type === "TENSOR_QUANT8_ASYMM" || type === "TENSOR_QUANT8_ASYMM_SIGNED" ||
    type === "TENSOR_QUANT8_SYMM" || type === "TENSOR_QUANT16_ASYMM" ||
    type === "TENSOR_QUANT16_SYMM";
  if (needsScale && !(scale > 0)) {
    fail(`${at}: a quantized tensor needs a positive scale, got ${scale}`, [...path, "scale"]);
  }
  if (!needsScale && type !== "TENSOR_INT32" && scale !== 0) {
    fail(`${at}: scale must be 0 for this type, got ${scale}`, [...path, "scale"]);
  }
  const zeroPointRange: [number, number] = type === "TENSOR_QUANT8_ASYMM"
    ? [0, 255]
    : type === "TENSOR_QUANT8_ASYMM_SIGNED"
    ? [-128, 127]
    : type === "TENSOR_QUANT16_ASYMM"
    ? [0, 65535]
    : [0, 0];
  if (zeroPoint < zeroPointRange[0] || zeroPoint > zeroPointRange[1]) {
    fail(
      `${at}: zeroPoint ${zeroPoint} is outside [${zeroPointRange[0]}, ${zeroPointRange[1]}]`,
      [...path, "zeroPoint"],
    );
  }
  if (type === "TENSOR_QUANT8_SYMM_PER_CHANNEL") {
    const cq = operand.channelQuant;
    if (!cq) fail(`${at}: per-channel quantization parameters are missing`, path);
    const rank = operand.dimensions.length;
    if (cq.channelDim >= rank) {
      fail(`${at}: channelDim ${cq.channelDim} is not below the rank ${rank}`, [
        ...path,
        "channelQuant",
        "channelDim",
      ]);
    }
    const channels = operand.dimensions[cq.channelDim];
    if (channels !== 0 && cq.scales.length !== channels) {
      fail(`${at}: ${cq.scales.length} channel scales for ${channels} channels`, [
        ...path,
        "channelQuant",
        "scales",
      ]);
    }
  } else if (operand.channelQuant) {
    fail(`${at}: channelQuant is only allowed on TENSOR_QUANT8_SYMM_PER_CHANNEL`, [
      ...path,
      "channelQuant",
    ]);
  }
}

function decodeConstant(
  operand: OperandJson,
  i: number,
  resolvePool: PoolResolver | undefined,
): TensorData {
  const path = ["operands", i];
  const at = `operand ${i} (${operand.type})`;
  if (!isFullySpecified(operand.dimensions)) {
    fail(`${at}: a constant must have fully specified dimensions`, [...path, "dimensions"]);
  }
  const count = elementCount(operand.dimensions);
  const bytes = count * elementBytes(operand.type);
  if (operand.value !== undefined && operand.location !== undefined) {
    fail(`${at}: give either value or location, not both`, path);
  }
  if (operand.location) {
    if (operand.lifetime !== "CONSTANT_REFERENCE") {
      fail(`${at}: location is only allowed on CONSTANT_REFERENCE operands`, [
        ...path,
        "location",
      ]);
    }
    if (!resolvePool) fail(`${at}: location needs memory pools`, [...path, "location"]);
    const { poolIndex, offset, length } = operand.location;
    if (length !== bytes) {
      fail(`${at}: location length ${length} does not match the ${bytes} bytes of its type`, [
        ...path,
        "location",
        "length",
      ]);
    }
    return fromBytes(operand.type, resolvePool(poolIndex, offset, length));
  }
  const value = operand.value;
  if (value === undefined) fail(`${at}: a constant needs a value`, [...path, "value"]);
  if (Array.isArray(value)) {
    if (value.length !== count) {
      fail(`${at}: value has ${value.length} elements, dimensions need ${count}`, [
        ...path,
        "value",
      ]);
    }
    const data = fromCheckedNumbers(operand.type, value);
    if (typeof data === "number") {
      fail(`${at}: value[${data}]: ${misfitReason(operand.type, value[data])}`, [
        ...path,
        "value",
        data,
      ]);
    }
    return data;
  }
  let decoded: Uint8Array;
  try {
    decoded = Uint8Array.fromBase64(value.base64);
  } catch {
    fail(`${at}: value.base64 is not valid base64`, [...path, "value", "base64"]);
  }
  if (decoded.byteLength !== bytes) {
    fail(`${at}: value has ${decoded.byteLength} bytes, dimensions need ${bytes}`, [
      ...path,
      "value",
    ]);
  }
  return fromBytes(operand.type, decoded);
}

/**
 * A subgraph reference's value: the index of the referenced subgraph it names, which must
 * exist. Type and lifetime SUBGRAPH go together, and only such operands name a subgraph.
 */
function subgraphReference(
  operand: OperandJson,
  i: number,
  referencedCount: number,
): TensorData | undefined {
  const path = ["operands", i];
  const isReference = operand.lifetime === "SUBGRAPH";
  if ((operand.type === "SUBGRAPH") !== isReference) {
    fail(
      `operand ${i}: a subgraph reference has type and lifetime SUBGRAPH, got type ${operand.type} with lifetime ${operand.lifetime}`,
      path,
    );
  }
  if (!isReference) {
    if (operand.subgraph !== undefined) {
      fail(`operand ${i}: only a SUBGRAPH operand names a subgraph`, [...path, "subgraph"]);
    }
    return undefined;
  }
  const k = operand.subgraph;
  if (k === undefined) {
    fail(`operand ${i} (SUBGRAPH) needs "subgraph", the index of a referenced subgraph`, path);
  }
  if (k >= referencedCount) {
    fail(
      `operand ${i} (SUBGRAPH) references subgraph ${k}, but the model has ${referencedCount} referenced subgraphs`,
      [...path, "subgraph"],
    );
  }
  return Uint32Array.of(k);
}

/**
 * Validates every operand of one graph and decodes constants; a SUBGRAPH operand's value is
 * the index of the subgraph it references (of `referencedCount`).
 */
export function buildOperands(
  json: GraphJson,
  options: { resolvePool: PoolResolver | undefined; referencedCount: number },
): Operand[] {
  return json.operands.map((operand, i) => {
    validateOperandType(operand, i);
    const constant = CONSTANT_LIFETIMES.has(operand.lifetime);
    if (!constant && (operand.value !== undefined || operand.location !== undefined)) {
      fail(`operand ${i}: only CONSTANT_COPY/CONSTANT_REFERENCE operands may have a value`, [
        "operands",
        i,
        "value",
      ]);
    }
    const reference = subgraphReference(operand, i, options.referencedCount);
    return {
      type: operand.type,
      dimensions: [...operand.dimensions],
      scale: operand.scale,
      zeroPoint: operand.zeroPoint,
      lifetime: operand.lifetime,
      channelQuant: operand.channelQuant,
      value: constant ? decodeConstant(operand, i, options.resolvePool) : reference,
    };
  });
}
