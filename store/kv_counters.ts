/**
 * Counts kept in Deno KV next to the records they count (a client's memory bytes, models,
 * compilations), changed in the same atomic commit as the records. A data dir from before a
 * counter existed has none: it is counted from the records once, in a commit only the first
 * counter may win.
 */
import type { StateEntry, StateKey, StateStore } from "./state_store.ts";
import { DriverError } from "../nnapi/errors.ts";

/** The counter at `key`, created from `recount` when absent. */
export async function kvCounter(
  kv: StateStore,
  key: StateKey,
  recount: () => Promise<number>,
): Promise<StateEntry<number>> {
  for (;;) {
    const entry = await kv.get<number>(key);
    if (entry.versionstamp !== null) return entry as StateEntry<number>;
    await kv.atomic().check(entry).set(key, await recount()).commit();
  }
}

/** Counts the values under `prefix` that pass `keep`. */
export async function countValues<T>(
  kv: StateStore,
  prefix: StateKey,
  keep: (value: T) => boolean = () => true,
): Promise<number> {
  let n = 0;
  for await (const entry of kv.list<T>({ prefix })) if (keep(entry.value)) n++;
  return n;
}

/** A client at its limit of `what` (models, compilations): it must delete one first. */
export function quotaReached(
  what: "models" | "compilations",
  limit: number,
  variable: string,
): DriverError {
  return new DriverError(
    "RESOURCE_EXHAUSTED_TRANSIENT",
    `this client has ${limit} ${what}, its limit (${variable}); delete one first`,
    { limit: what },
  );
}
