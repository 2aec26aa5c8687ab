/**
 * Conversion faults: every refusal is INVALID_ARGUMENT naming what could not be converted
 * (the node, its op type and the reason), so a client sees why, never a 500 or a silent
 * wrong result.
 */
import { DriverError, type DriverErrorDetails, invalid } from "../nnapi/errors.ts";

/**
 * A limit of the conversion (a tensor too large, the fold budget spent) passed by a tensor a
 * rule asked for: a plain error, so that the node converting turns it into a refusal naming
 * itself ({@link asNodeFault}), which carries the limit's name.
 */
export class ConversionLimitError extends Error {
  override name = "ConversionLimitError";
  readonly details: DriverErrorDetails = { limit: "import_folding" };
}

/** A fault in one node of the source graph. */
export function nodeFault(
  node: { name: string; opType: string; index: number },
  reason: string,
  details?: DriverErrorDetails,
): DriverError {
  const name = node.name ? `'${node.name}'` : `#${node.index}`;
  return invalid(`node ${name} (${node.opType}): ${reason}`, details);
}

/**
 * A node no rule converts (an op type or domain the converter lacks): refused at import even
 * inside an If branch, which other faults only make fail at execution.
 */
export class UnsupportedNodeError extends DriverError {}

/** The refusal of a node whose op type or domain the converter lacks. */
export function unsupportedNode(
  node: { name: string; opType: string; index: number },
  reason: string,
): UnsupportedNodeError {
  const { message } = nodeFault(node, reason);
  return new UnsupportedNodeError("INVALID_ARGUMENT", message);
}

/** A fault in the file as a whole (not a protobuf, external data, no graph, ...). */
export function fileFault(reason: string, details?: DriverErrorDetails): DriverError {
  return invalid(`ONNX model: ${reason}`, details);
}

/** Rethrows driver errors; anything else becomes a fault of the node being converted. */
export function asNodeFault(
  node: { name: string; opType: string; index: number },
  error: unknown,
): DriverError {
  if (error instanceof DriverError) return error;
  if (error instanceof ConversionLimitError) return nodeFault(node, error.message, error.details);
  return nodeFault(node, error instanceof Error ? error.message : String(error));
}
