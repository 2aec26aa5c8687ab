/** Helpers of the SDK tests. */
import { ok, rejects, strictEqual } from "node:assert/strict";
import { NnapiError } from "../client/mod.ts";

/** Awaits a rejection that must be the SDK's NnapiError with this NNAPI and HTTP status. */
export async function rejectsWithStatus(
  promise: Promise<unknown>,
  status: NnapiError["status"],
  httpStatus: number,
): Promise<NnapiError> {
  let caught: unknown;
  await rejects(promise, (error) => {
    caught = error;
    return true;
  });
  ok(caught instanceof NnapiError, `expected NnapiError, got ${caught}`);
  strictEqual(caught.status, status, caught.message);
  strictEqual(caught.httpStatus, httpStatus);
  ok(caught.message.length > 0);
  return caught;
}
