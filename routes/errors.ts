/**
 * The one place where NNAPI error statuses become HTTP responses (docs/api.md "Errors"). Every
 * failure — driver errors, schema errors, malformed JSON, unknown routes, bugs — leaves
 * through `errorResponse` with the body `{status, message, ...}`.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ZodError } from "zod";
import { DriverError, type ErrorStatus } from "../nnapi/errors.ts";

/** HTTP status of each NNAPI status; exhaustive by construction. */
export const HTTP_STATUS: Record<ErrorStatus, ContentfulStatusCode> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  OUTPUT_INSUFFICIENT_SIZE: 422,
  UNAUTHORIZED: 401,
  RESOURCE_EXHAUSTED_TRANSIENT: 429,
  RESOURCE_EXHAUSTED_PERSISTENT: 413,
  MISSED_DEADLINE_TRANSIENT: 504,
  MISSED_DEADLINE_PERSISTENT: 504,
  DEVICE_UNAVAILABLE: 503,
  GENERAL_FAILURE: 500,
};

type Issue = ZodError["issues"][number];

/**
 * The issue to report. A value matching no branch of a union (a list or an object of
 * arguments) is reported by the branch that got furthest into it: the one whose first
 * issue has the longest path, so the message names the field as it would without the union.
 * A union whose branches all fail at its own place keeps its own message.
 */
function specificIssue(issue: Issue): Issue {
  if (issue.code !== "invalid_union" || issue.errors.length === 0) return issue;
  const branches = issue.errors.filter((b) => b.length > 0).map((b) => specificIssue(b[0]));
  if (branches.length === 0) return issue;
  const deepest = branches.reduce((a, b) => (b.path.length > a.path.length ? b : a));
  // Branches failing at the union's own place: the union's message says it best.
  if (deepest.path.length === 0) return issue;
  return { ...deepest, path: [...issue.path, ...deepest.path] };
}

/** Turns the first zod issue into an INVALID_ARGUMENT naming the field. */
export function schemaError(error: ZodError, where: string): DriverError {
  const issue = specificIssue(error.issues[0]);
  const path = issue.path.map((p) => (typeof p === "symbol" ? String(p) : p));
  const at = path.length > 0 ? `${where}.${path.join(".")}` : where;
  return new DriverError("INVALID_ARGUMENT", `${at}: ${issue.message}`, { path });
}

/**
 * Whether an error means the client went away mid-request: its connection closed while the
 * request body was being read (an upload cut short). That is the client's doing, not a bug.
 */
export function isClientDisconnect(error: unknown): boolean {
  if (error instanceof Deno.errors.BadResource) {
    // Deno's words when the connection of a body being read is gone.
    return /read (request )?body/i.test(error.message);
  }
  return error instanceof Deno.errors.ConnectionReset ||
    error instanceof Deno.errors.ConnectionAborted ||
    error instanceof Deno.errors.BrokenPipe ||
    error instanceof Deno.errors.UnexpectedEof ||
    error instanceof Deno.errors.Http;
}

/** When to try again after the storage was full: long enough for an operator to act. */
const STORAGE_RETRY_SECONDS = 30;

/** Whether `error` is the OS saying a disk (or a quota) is full. */
function isStorageFull(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && (code === "ENOSPC" || code === "EDQUOT");
}

/** Transient refusals that are a store's (a full disk, a database away), not rate limits. */
const UNAVAILABLE_STORES: ReadonlySet<string> = new Set(["storage", "state_store"]);

/**
 * The HTTP status of an error: its NNAPI status's, except that a transient refusal by a
 * store (a full disk, an unreachable database) is 503, as docs/api.md allows: the service is
 * not rate-limiting the client.
 */
export function httpStatus(error: DriverError): ContentfulStatusCode {
  const limit = error.details.limit;
  if (error.status === "RESOURCE_EXHAUSTED_TRANSIENT" && UNAVAILABLE_STORES.has(limit ?? "")) {
    return 503;
  }
  return HTTP_STATUS[error.status];
}

/** Any thrown value as a DriverError; unknown errors are bugs (GENERAL_FAILURE) and logged. */
export function toDriverError(error: unknown): DriverError {
  if (error instanceof DriverError) return error;
  if (isClientDisconnect(error)) {
    return new DriverError("INVALID_ARGUMENT", "the client closed the connection mid-request");
  }
  if (error instanceof HTTPException) {
    const status: ErrorStatus = error.status === 401
      ? "UNAUTHORIZED"
      : error.status === 404
      ? "NOT_FOUND"
      : error.status === 413
      ? "RESOURCE_EXHAUSTED_PERSISTENT"
      : error.status < 500
      ? "INVALID_ARGUMENT"
      : "GENERAL_FAILURE";
    const message = error.status === 415
      ? "the request body must be JSON (Content-Type: application/json)"
      : error.message || "bad request";
    return new DriverError(status, message);
  }
  if (error instanceof SyntaxError) {
    return new DriverError("INVALID_ARGUMENT", `malformed JSON: ${error.message}`);
  }
  if (isStorageFull(error)) {
    // The OS's message names the file, and so the store (data dir, blob directory, cache).
    console.error(`nnserve: storage full: ${error.message}`);
    return new DriverError(
      "RESOURCE_EXHAUSTED_TRANSIENT",
      `the service's storage is full, try again later: ${error.message}`,
      { limit: "storage", retryAfterSeconds: STORAGE_RETRY_SECONDS },
    );
  }
  console.error("nnserve: unexpected error", error);
  return new DriverError("GENERAL_FAILURE", "internal error");
}

/** What an error is answered with: the HTTP status, extra headers and the JSON body. */
export interface ErrorAnswer {
  status: ContentfulStatusCode;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * The error answer of docs/api.md for a request of `method` to `path`; under `/v2`, the Open
 * Inference Protocol's `{"error": "..."}` with the same HTTP status.
 */
export function errorAnswer(error: unknown, method: string, path: string): ErrorAnswer {
  if (isClientDisconnect(error)) {
    // One quiet line per dropped client; nobody is left to read the answer.
    console.log(`nnserve: client left during ${method} ${path} (request cut short)`);
  }
  const e = toDriverError(error);
  const headers: Record<string, string> = e.details.retryAfterSeconds === undefined
    ? {}
    : { "Retry-After": String(e.details.retryAfterSeconds) };
  const body = path === "/v2" || path.startsWith("/v2/")
    ? { error: e.message }
    : { status: e.status, message: e.message, ...e.details };
  return { status: httpStatus(e), headers, body };
}

/** The error response of the router's handlers ({@link errorAnswer}). */
export function errorResponse(c: Context, error: unknown): Response {
  const answer = errorAnswer(error, c.req.method, c.req.path);
  for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
  return c.json(answer.body, answer.status);
}
