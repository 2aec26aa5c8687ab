/**
 * Paged listings over Deno KV: the values under a key prefix that pass a filter, a page at a
 * time, in key order. The cursor names the last key of the page before (base64url of its
 * last part), so a page starts after it however the keys changed in between, and a cursor
 * that does not decode is refused rather than silently starting anywhere.
 */
import type { StateKey, StateKeyPart, StateStore } from "./state_store.ts";
import { invalid } from "../nnapi/errors.ts";

/** One page of a listing; `next` is absent on the last page. */
export interface Page<T> {
  items: T[];
  next?: string;
}

function encodeCursor(last: StateKeyPart): string {
  return new TextEncoder().encode(JSON.stringify(last)).toBase64({ alphabet: "base64url" });
}

function decodeCursor(cursor: string): string {
  try {
    const last = JSON.parse(
      new TextDecoder().decode(Uint8Array.fromBase64(cursor, { alphabet: "base64url" })),
    );
    if (typeof last === "string") return last;
  } catch {
    // Reported below.
  }
  throw invalid(`cursor '${cursor}' is not a cursor of this listing`, {
    path: ["query", "cursor"],
  });
}

/** Up to `limit` values under `prefix` (keys of one more string part) that pass `keep`. */
export async function listPage<T>(
  kv: StateStore,
  prefix: StateKey,
  options: { keep: (value: T) => boolean; limit: number; cursor?: string },
): Promise<Page<T>> {
  const { keep, limit, cursor } = options;
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  const selector = after === undefined ? { prefix } : { prefix, start: [...prefix, after] };
  const items: T[] = [];
  let last: StateKeyPart | undefined;
  for await (const entry of kv.list<T>(selector)) {
    const part = entry.key[entry.key.length - 1];
    if (part === after || !keep(entry.value)) continue;
    // One more match than the page holds: there is a next page, after the page's last.
    if (items.length === limit) return { items, next: encodeCursor(last!) };
    items.push(entry.value);
    last = part;
  }
  return { items };
}

/** The values at `keys` that exist, in order. */
export async function readMany<T>(kv: StateStore, keys: readonly StateKey[]): Promise<T[]> {
  const entries = await kv.getMany<T>(keys);
  return entries.flatMap((entry) => (entry.versionstamp === null ? [] : [entry.value as T]));
}
