/**
 * The service's state (records of models, compilations, memories, regions, the cache's
 * token->hash map, clients' counters) as an ordered key-value store with atomic commits:
 * the subset of Deno KV the stores use. Two implementations: Deno KV (embedded, the
 * default: a file in the data dir) and PostgreSQL (`postgres_state.ts`, for replicas that
 * share state, selected by NNSERVE_DATABASE_URL). `tests/state_store_contract_test.ts` runs
 * the same cases against both.
 */
import { KeyedTurns } from "./keyed_turns.ts";

/** One part of a key: the stores use strings and numbers. */
export type StateKeyPart = string | number;

/** A key: its parts order the store (strings by code unit, numbers numerically). */
export type StateKey = readonly StateKeyPart[];

/** An entry that exists. */
export interface StateEntry<T> {
  key: StateKey;
  value: T;
  /** Changes with every write of the key. */
  versionstamp: string;
}

/** An entry that may be absent (`value` and `versionstamp` null). */
export type StateEntryMaybe<T> = StateEntry<T> | {
  key: StateKey;
  value: null;
  versionstamp: null;
};

/** What a commit checks: the key's versionstamp is still this (null: still absent). */
export interface StateCheck {
  key: StateKey;
  versionstamp: string | null;
}

/** An atomic commit: every check holds and every mutation applies, or none does. */
export interface StateAtomic {
  check(...checks: StateCheck[]): StateAtomic;
  set(key: StateKey, value: unknown): StateAtomic;
  delete(key: StateKey): StateAtomic;
  /** `ok: false` when a check failed (another writer came first): read again and retry. */
  commit(): Promise<{ ok: boolean }>;
}

/** Entries to list: those under `prefix`, from `start` (inclusive) when given. */
export interface StateSelector {
  prefix: StateKey;
  start?: StateKey;
}

/** The state store. Values are JSON-shaped (objects, arrays, strings, numbers, booleans). */
export interface StateStore {
  /**
   * Whether other processes (replicas) share this store: then what a replica keeps on its
   * own disk is not seen by the others, so memories' contents and cache files go to the
   * blob store.
   */
  readonly shared: boolean;
  get<T>(key: StateKey): Promise<StateEntryMaybe<T>>;
  /** The entries of `keys`, in order. */
  getMany<T>(keys: readonly StateKey[]): Promise<StateEntryMaybe<T>[]>;
  /** Entries in key order. */
  list<T>(selector: StateSelector, options?: { limit?: number }): AsyncIterable<StateEntry<T>>;
  set(key: StateKey, value: unknown): Promise<void>;
  delete(key: StateKey): Promise<void>;
  atomic(): StateAtomic;
  /**
   * Tells every process on this store, this one included, of a change whose effects they
   * hold in memory (a deleted compilation, say): PostgreSQL's NOTIFY reaches every replica;
   * Deno KV's file has one process, so this one only.
   */
  announce(message: string): Promise<void>;
  /** Hears announcements until the returned function is called. */
  listen(listener: (message: string) => void): Promise<() => Promise<void>>;
  /**
   * Runs `run` holding the lock `name` across every process on this store, this one
   * included: no two holders of one name overlap (different names never wait on each
   * other). Released when `run` settles, whether it returns or throws, and when the
   * process dies (so a lock never outlives its holder). For work that would be wasted if
   * done twice, such as preparing one compilation on several replicas at once: a lock
   * lost with a broken connection lets a second holder in, so it never guards correctness.
   */
  withLock<T>(name: string, run: () => Promise<T>): Promise<T>;
  /** Whether the store answers within `withinMs` (readiness probes). */
  available(withinMs: number): Promise<boolean>;
  close(): void | Promise<void>;
}

/** Deno KV as the state store (the embedded default). */
export class KvStateStore implements StateStore {
  /** A Deno KV file has one process. */
  readonly shared = false;
  readonly #kv: Deno.Kv;
  readonly #listeners = new Set<(message: string) => void>();
  /** One process on the file: its locks are in-process, holders of a name taking turns. */
  readonly #locks = new KeyedTurns();

  constructor(kv: Deno.Kv) {
    this.#kv = kv;
  }

  /** A file of this process's own: it answers while the process runs. */
  available(): Promise<boolean> {
    return Promise.resolve(true);
  }

  /** Opens (or creates) the Deno KV file at `path`. */
  static async open(path: string): Promise<KvStateStore> {
    return new KvStateStore(await Deno.openKv(path));
  }

  get<T>(key: StateKey): Promise<StateEntryMaybe<T>> {
    return this.#kv.get<T>(key as Deno.KvKey) as Promise<StateEntryMaybe<T>>;
  }

  async getMany<T>(keys: readonly StateKey[]): Promise<StateEntryMaybe<T>[]> {
    const entries: StateEntryMaybe<T>[] = [];
    // Deno KV reads at most 10 keys at once.
    for (let at = 0; at < keys.length; at += 10) {
      const part = keys.slice(at, at + 10) as Deno.KvKey[];
      entries.push(...(await this.#kv.getMany<T[]>(part)) as StateEntryMaybe<T>[]);
    }
    return entries;
  }

  list<T>(selector: StateSelector, options: { limit?: number } = {}): AsyncIterable<StateEntry<T>> {
    const prefix = selector.prefix as Deno.KvKey;
    const kvSelector = selector.start === undefined
      ? { prefix }
      : { prefix, start: selector.start as Deno.KvKey };
    return this.#kv.list<T>(kvSelector, options) as AsyncIterable<StateEntry<T>>;
  }

  async set(key: StateKey, value: unknown): Promise<void> {
    await this.#kv.set(key as Deno.KvKey, value);
  }

  delete(key: StateKey): Promise<void> {
    return this.#kv.delete(key as Deno.KvKey);
  }

  atomic(): StateAtomic {
    const operation = this.#kv.atomic();
    const atomic: StateAtomic = {
      check(...checks) {
        operation.check(...checks as Deno.AtomicCheck[]);
        return atomic;
      },
      set(key, value) {
        operation.set(key as Deno.KvKey, value);
        return atomic;
      },
      delete(key) {
        operation.delete(key as Deno.KvKey);
        return atomic;
      },
      async commit() {
        return { ok: (await operation.commit()).ok };
      },
    };
    return atomic;
  }

  announce(message: string): Promise<void> {
    for (const listener of this.#listeners) queueMicrotask(() => listener(message));
    return Promise.resolve();
  }

  listen(listener: (message: string) => void): Promise<() => Promise<void>> {
    this.#listeners.add(listener);
    return Promise.resolve(() => {
      this.#listeners.delete(listener);
      return Promise.resolve();
    });
  }

  withLock<T>(name: string, run: () => Promise<T>): Promise<T> {
    return this.#locks.run(name, run);
  }

  close(): void {
    this.#kv.close();
  }
}
