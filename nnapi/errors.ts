/**
 * NNAPI error statuses (HAL 1.3 `ErrorStatus` plus the service-level UNAUTHORIZED/NOT_FOUND)
 * carried by every failure the driver reports, so that routes map them in one place.
 */
// One list with the SDK's (client/vocabulary.ts), as for the operand and operation types.
export { ERROR_STATUSES, type ErrorStatus, type OutputShape } from "../client/vocabulary.ts";
import type { ErrorStatus, OutputShape } from "../client/vocabulary.ts";

/**
 * The service's limits, named in the refusals they cause (the `limit` of an error body) and
 * counted by name in `/metrics` (`nnserve_refusals_total`).
 */
export const LIMITS = [
  "queue",
  "client_queue",
  "batch_queue",
  "bursts",
  "burst_window",
  "models",
  "compilations",
  "model_size",
  "memory_size",
  "memory_budget",
  "body_size",
  "storage",
  "state_store",
  "imports",
  "import_time",
  "import_folding",
] as const;

export type Limit = typeof LIMITS[number];

/** Extra fields serialized next to `status` and `message` in an error body. */
export interface DriverErrorDetails {
  path?: (string | number)[];
  outputShapes?: OutputShape[];
  /** For transient refusals: when to try again (HTTP's Retry-After). */
  retryAfterSeconds?: number;
  /** The limit that refused the request. */
  limit?: Limit;
}

/** A typed failure: the NNAPI status decides the HTTP status, the message says what and where. */
export class DriverError extends Error {
  readonly status: ErrorStatus;
  readonly details: DriverErrorDetails;

  constructor(status: ErrorStatus, message: string, details: DriverErrorDetails = {}) {
    super(message);
    this.name = "DriverError";
    this.status = status;
    this.details = details;
  }
}

/** Shorthand for the most common failure: the client sent something invalid. */
export function invalid(message: string, details?: DriverErrorDetails): DriverError {
  return new DriverError("INVALID_ARGUMENT", message, details);
}

/** Shorthand for a missing (or not visible to this client) resource. */
export function notFound(message: string): DriverError {
  return new DriverError("NOT_FOUND", message);
}
