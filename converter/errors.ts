/**
 * Conversion faults: every refusal is INVALID_ARGUMENT naming what could not be converted
 * (the node, its op type and the reason), so a client sees why, never a 500 or a silent
 * wrong result.
 */
import { DriverError, invalid } from "../nnapi/errors.ts";

/** A fault in one node of the source graph. */
export function nodeFault(
  node: { name: string; opType: string; index: number },
  reason: string,
): DriverError {
  const name = node.name ? `'${node.name}'` : `#${node.index}`;
  return invalid(`node ${name} (${node.opType}): ${reason}`);
}

/** A fault in the file as a whole (not a protobuf, external data, no graph, ...). */
export function fileFault(reason: string): DriverError {
  return invalid(`ONNX model: ${reason}`);
}

/** Rethrows driver errors; anything else becomes a fault of the node being converted. */
export function asNodeFault(
  node: { name: string; opType: string; index: number },
  error: unknown,
): DriverError {
  if (error instanceof DriverError) return error;
  return nodeFault(node, error instanceof Error ? error.message : String(error));
}
