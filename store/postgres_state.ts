/**
 * The state store on PostgreSQL (NNSERVE_DATABASE_URL), for replicas that share state. One
 * table of entries: the key's ordered bytes (`state_keys.ts`), the value as JSON text (kept
 * exactly as written) and a version from a sequence (the versionstamp). An atomic commit is
 * one SERIALIZABLE transaction that reads its checked keys first: a check that no longer
 * holds, or a concurrent transaction PostgreSQL cannot order, makes the commit `ok: false`,
 * and the caller reads again and retries, as with Deno KV. The schema's migrations are
 * versioned here and applied at open under an advisory lock, so replicas starting together
 * apply them once. Announcements go to every replica through LISTEN/NOTIFY. Named locks
 * (`withLock`) are session advisory locks, all of a process's held on one connection of
 * their own: a replica that dies releases them as its connection closes.
 */
import { Buffer } from "node:buffer";
import postgres from "postgres";
import { DriverError } from "../nnapi/errors.ts";
import {
  decodeKey,
  encodeKey as encodeKeyBytes,
  prefixEnd as prefixEndBytes,
} from "./state_keys.ts";
import { KeyedTurns } from "./keyed_turns.ts";
import type {
  StateAtomic,
  StateCheck,
  StateEntry,
  StateEntryMaybe,
  StateKey,
  StateSelector,
  StateStore,
} from "./state_store.ts";

/** The schema, one step per version; a database at version n runs the steps after n. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE nnserve_state (
     key bytea PRIMARY KEY,
     value text NOT NULL,
     version bigint NOT NULL
   );
   CREATE SEQUENCE nnserve_state_version;`,
];

/** Any number that identifies nnserve's migration lock among the database's advisory locks. */
const MIGRATION_LOCK = 0x6e6e7376;

/** The NOTIFY channel of announcements. */
const CHANNEL = "nnserve_changes";

/** PostgreSQL's type id of bytea, for arrays of keys. */
const BYTEA = 17;

/** How long a lock taken elsewhere is waited for before trying again (ms), plus up to as much. */
const LOCK_POLL_MS = 25;

/** Serialization failures and deadlocks: the transaction lost to a concurrent one. */
const RETRYABLE = new Set(["40001", "40P01"]);

type Sql = postgres.Sql;
type Row = { key: Uint8Array; value: string; version: string };

/** Key bytes as the driver sends bytea: a Buffer. */
const encodeKey = (key: StateKey) => Buffer.from(encodeKeyBytes(key));
const prefixEnd = (prefix: StateKey) => Buffer.from(prefixEndBytes(prefix));

const versionstamp = (version: string | bigint) => BigInt(version).toString(16).padStart(20, "0");

function entry<T>(row: Row): StateEntry<T> {
  return {
    key: decodeKey(new Uint8Array(row.key)),
    value: JSON.parse(row.value) as T,
    versionstamp: versionstamp(row.version),
  };
}

/** A value as stored: JSON text (the stores keep JSON-shaped values only). */
function stored(value: unknown): string {
  if (value === undefined) throw new TypeError("a state value cannot be undefined");
  return JSON.stringify(value);
}

/** A commit that lost: a check failed. */
class CheckFailed extends Error {}

/** Default of how long one state operation may wait for the database (seconds). */
export const DEFAULT_STATE_TIMEOUT_SECONDS = 5;

/** When a refused client should try again while the database is away (seconds). */
const UNAVAILABLE_RETRY_SECONDS = 5;

/**
 * Errors that say the database cannot be reached or is going away: the client's own
 * (postgres.js), the socket's, and PostgreSQL's connection exceptions (class 08), shutdowns
 * (57P01-57P03) and "too many connections" (53300).
 */
function isUnavailable(error: unknown): boolean {
  const code = String((error as { code?: unknown } | null)?.code ?? "");
  return /^(CONNECTION_|CONNECT_TIMEOUT|E(CONNREFUSED|CONNRESET|PIPE|HOSTUNREACH|NETUNREACH|TIMEDOUT|AI_AGAIN)$|ENOTFOUND$|08|57P0[123]$|53300$)/
    .test(code);
}

/**
 * Reconnection delays after failed attempts (seconds): short and capped at one second, so a
 * database that comes back is used again at once (postgres.js's own default grows to 20).
 */
function reconnectDelay(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1);
}

/** PostgreSQL as the state store. */
export class PostgresStateStore implements StateStore {
  /** Every replica on the database shares it. */
  readonly shared = true;
  readonly #sql: Sql;
  /**
   * The one connection (opened on first use) that holds this process's advisory locks.
   * Not the pool's: a holder keeps its lock while its work runs, and that work needs the
   * pool, so holders each reserving a pooled connection would deadlock once as many
   * prepared at once as the pool has connections. No lifetime limit: the driver must not
   * recycle it under a held lock.
   */
  readonly #lockSql: Sql;
  /**
   * Holders in this process take turns per name first: a session's advisory locks are
   * reentrant, so they cannot keep this process's own holders apart.
   */
  readonly #locks = new KeyedTurns();

  /** How long one operation may wait for the database before it is refused (ms). */
  readonly #timeoutMs: number;
  /** Where the database is (host and port), for messages: never the URL's password. */
  readonly #where: string;

  private constructor(sql: Sql, lockSql: Sql, timeoutMs: number, where: string) {
    this.#sql = sql;
    this.#lockSql = lockSql;
    this.#timeoutMs = timeoutMs;
    this.#where = where;
  }

  /**
   * Connects to `url` and brings the schema up to date. Every operation after that waits at
   * most `timeoutSeconds` for the database; one that cannot reach it is refused with
   * RESOURCE_EXHAUSTED_TRANSIENT (503, Retry-After) rather than left hanging.
   */
  static async open(
    url: string,
    options: { max?: number; timeoutSeconds?: number } = {},
  ): Promise<PostgresStateStore> {
    const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_STATE_TIMEOUT_SECONDS;
    const connection = {
      onnotice: () => {},
      connect_timeout: Math.max(1, Math.ceil(timeoutSeconds)),
      backoff: reconnectDelay,
    };
    const sql = postgres(url, { max: options.max ?? 10, ...connection });
    try {
      await sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
        await tx`CREATE TABLE IF NOT EXISTS nnserve_schema (version integer NOT NULL)`;
        const [row] = await tx<
          { version: number }[]
        >`SELECT max(version) AS version FROM nnserve_schema`;
        const at = row?.version ?? 0;
        for (let version = at + 1; version <= MIGRATIONS.length; version++) {
          await tx.unsafe(MIGRATIONS[version - 1]);
          await tx`INSERT INTO nnserve_schema (version) VALUES (${version})`;
        }
      });
    } catch (error) {
      await sql.end({ timeout: 1 });
      throw error;
    }
    const lockSql = postgres(url, { max: 1, max_lifetime: 0, ...connection });
    const where = URL.canParse(url) ? new URL(url).host : "the configured database";
    return new PostgresStateStore(sql, lockSql, timeoutSeconds * 1000, where);
  }

  /**
   * Runs one operation on the database, refused with RESOURCE_EXHAUSTED_TRANSIENT (limit
   * `state_store`) when the database cannot be reached or does not answer within the
   * timeout. A refused write may still land once the database answers, as with any write
   * whose answer is lost.
   */
  #bounded<T>(operation: () => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(this.#unavailable(`no answer within ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    const running = operation();
    running.catch(() => {}); // its failure after the timeout is nobody's to hear
    return Promise.race([running, late]).catch((error) => {
      if (isUnavailable(error)) throw this.#unavailable((error as Error).message);
      throw error;
    }).finally(() => clearTimeout(timer));
  }

  #unavailable(why: string): DriverError {
    return new DriverError(
      "RESOURCE_EXHAUSTED_TRANSIENT",
      `the state store (PostgreSQL at ${this.#where}) is unavailable, try again later: ${why}`,
      { limit: "state_store", retryAfterSeconds: UNAVAILABLE_RETRY_SECONDS },
    );
  }

  /** Whether the database answers within `withinMs` (the state timeout at most). */
  async available(withinMs = this.#timeoutMs): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<false>((resolve) =>
      timer = setTimeout(() => resolve(false), withinMs)
    );
    const answer = this.#bounded(() => this.#sql`SELECT 1`).then(() => true, () => false);
    try {
      return await Promise.race([answer, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async get<T>(key: StateKey): Promise<StateEntryMaybe<T>> {
    const rows = await this.#bounded(() =>
      this.#sql<Row[]>`
      SELECT key, value, version FROM nnserve_state WHERE key = ${encodeKey(key)}`
    );
    return rows.length > 0 ? entry<T>(rows[0]) : { key, value: null, versionstamp: null };
  }

  async getMany<T>(keys: readonly StateKey[]): Promise<StateEntryMaybe<T>[]> {
    if (keys.length === 0) return [];
    const encoded = keys.map(encodeKey);
    const rows = await this.#bounded(() =>
      this.#sql<Row[]>`
      SELECT key, value, version FROM nnserve_state
      WHERE key = ANY(${this.#sql.array(encoded, BYTEA)})`
    );
    const found = new Map(rows.map((row) => [hex(new Uint8Array(row.key)), row]));
    return keys.map((key, k) => {
      const row = found.get(hex(encoded[k]));
      return row ? entry<T>(row) : { key, value: null, versionstamp: null };
    });
  }

  async *list<T>(
    selector: StateSelector,
    options: { limit?: number } = {},
  ): AsyncIterable<StateEntry<T>> {
    const prefix = encodeKey(selector.prefix);
    const start = selector.start === undefined ? undefined : encodeKey(selector.start);
    const end = prefixEnd(selector.prefix);
    let remaining = options.limit ?? Infinity;
    // Pages in key order, so a long listing never holds the whole range in memory.
    let after: Buffer | undefined;
    while (remaining > 0) {
      const page = Math.min(remaining, 500);
      const rows = await this.#bounded(() => this.#page(prefix, start, after, end, page));
      for (const row of rows) yield entry<T>(row);
      if (rows.length < page) return;
      remaining -= rows.length;
      after = Buffer.from(rows[rows.length - 1].key);
    }
  }

  /** One page of a listing, in key order. */
  #page(
    prefix: Buffer,
    start: Buffer | undefined,
    after: Buffer | undefined,
    end: Buffer,
    page: number,
  ): Promise<Row[]> {
    return after !== undefined
      ? this.#sql<Row[]>`
          SELECT key, value, version FROM nnserve_state
          WHERE key > ${after} AND key < ${end} ORDER BY key LIMIT ${page}`
      : start !== undefined
      ? this.#sql<Row[]>`
          SELECT key, value, version FROM nnserve_state
          WHERE key >= ${start} AND key > ${prefix} AND key < ${end} ORDER BY key LIMIT ${page}`
      : this.#sql<Row[]>`
          SELECT key, value, version FROM nnserve_state
          WHERE key > ${prefix} AND key < ${end} ORDER BY key LIMIT ${page}`;
  }

  async set(key: StateKey, value: unknown): Promise<void> {
    await this.#bounded(() =>
      this.#sql`
      INSERT INTO nnserve_state (key, value, version)
      VALUES (${encodeKey(key)}, ${stored(value)}, nextval('nnserve_state_version'))
      ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = excluded.version`
    );
  }

  async delete(key: StateKey): Promise<void> {
    await this.#bounded(() => this.#sql`DELETE FROM nnserve_state WHERE key = ${encodeKey(key)}`);
  }

  atomic(): StateAtomic {
    const checks: StateCheck[] = [];
    const mutations: ({ key: StateKey; value: string } | { key: StateKey; value?: undefined })[] =
      [];
    const sql = this.#sql;
    const bounded = <T>(operation: () => Promise<T>) => this.#bounded(operation);
    const atomic: StateAtomic = {
      check(...more) {
        checks.push(...more);
        return atomic;
      },
      set(key, value) {
        mutations.push({ key, value: stored(value) });
        return atomic;
      },
      delete(key) {
        mutations.push({ key });
        return atomic;
      },
      async commit() {
        try {
          await bounded(() =>
            sql.begin("ISOLATION LEVEL SERIALIZABLE", async (tx) => {
              for (const check of checks) {
                const rows = await tx<{ version: string }[]>`
                SELECT version FROM nnserve_state WHERE key = ${encodeKey(check.key)} FOR UPDATE`;
                const now = rows.length > 0 ? versionstamp(rows[0].version) : null;
                if (now !== check.versionstamp) throw new CheckFailed();
              }
              for (const mutation of mutations) {
                const key = encodeKey(mutation.key);
                if (mutation.value === undefined) {
                  await tx`DELETE FROM nnserve_state WHERE key = ${key}`;
                } else {
                  await tx`
                  INSERT INTO nnserve_state (key, value, version)
                  VALUES (${key}, ${mutation.value}, nextval('nnserve_state_version'))
                  ON CONFLICT (key) DO UPDATE
                    SET value = excluded.value, version = excluded.version`;
                }
              }
            })
          );
          return { ok: true };
        } catch (error) {
          if (error instanceof CheckFailed) return { ok: false };
          if (RETRYABLE.has((error as { code?: string }).code ?? "")) return { ok: false };
          throw error;
        }
      },
    };
    return atomic;
  }

  async announce(message: string): Promise<void> {
    await this.#bounded(() => this.#sql.notify(CHANNEL, message));
  }

  async listen(listener: (message: string) => void): Promise<() => Promise<void>> {
    const { unlisten } = await this.#sql.listen(CHANNEL, listener);
    return unlisten;
  }

  withLock<T>(name: string, run: () => Promise<T>): Promise<T> {
    return this.#locks.run(name, async () => {
      await this.#lock(name);
      try {
        return await run();
      } finally {
        // Fails only with the connection, and a closed session has released its locks.
        await this.#lockSql`SELECT pg_advisory_unlock(hashtextextended(${name}, 0))`
          .catch(() => {});
      }
    });
  }

  /**
   * Takes the advisory lock `name`, trying again after a short sleep while another
   * process holds it: a waiter holds no connection, so waiting never exhausts a pool.
   */
  async #lock(name: string): Promise<void> {
    for (;;) {
      const [row] = await this.#lockSql<{ held: boolean }[]>`
        SELECT pg_try_advisory_lock(hashtextextended(${name}, 0)) AS held`;
      if (row.held) return;
      const ms = LOCK_POLL_MS * (1 + Math.random());
      await new Promise((resolve) => setTimeout(resolve, ms));
    }
  }

  async close(): Promise<void> {
    await this.#lockSql.end({ timeout: 5 });
    await this.#sql.end({ timeout: 5 });
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
