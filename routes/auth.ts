/**
 * Clients and API keys (docs/api.md "Clients and authentication"): each bearer key is one
 * client; with no keys the service is open and everyone is the anonymous client.
 */
import type { MiddlewareHandler } from "hono";
import { DriverError } from "../nnapi/errors.ts";
import { sha256 } from "./sha256.ts";

/** Client name by API key. */
export type ApiKeys = Map<string, string>;

/** The client name used when no keys are configured. */
export const ANONYMOUS_CLIENT = "anonymous";

/** A malformed or ambiguous key list; its message never contains key material. */
export class ApiKeysError extends Error {
  override name = "ApiKeysError";
}

/** Options of `parseApiKeys`. */
export interface ParseApiKeysOptions {
  /** Where the text comes from, for messages (e.g. `NNSERVE_API_KEYS`). */
  source?: string;
  /** Keys of an earlier source to add to: a key may not name two clients across sources. */
  into?: ApiKeys;
}

/**
 * Parses `name:key` pairs separated by commas or newlines; blank entries are skipped. One
 * name may hold several keys (rotation: the old and the new key both work); a key given to
 * two names is an error, as either choice would silently hand one client's data to the other.
 * Messages name entries by position and never quote them: an entry without a colon may be a
 * bare key.
 */
export function parseApiKeys(text: string, options: ParseApiKeysOptions = {}): ApiKeys {
  const source = options.source ?? "API keys";
  const keys: ApiKeys = options.into ?? new Map();
  let position = 0;
  for (const raw of text.split(/[,\n]/)) {
    const entry = raw.trim();
    if (!entry) continue;
    position++;
    const colon = entry.indexOf(":");
    const name = entry.slice(0, Math.max(colon, 0)).trim();
    const key = colon < 0 ? "" : entry.slice(colon + 1).trim();
    if (!name || !key) {
      throw new ApiKeysError(
        `${source}: entry ${position} is not name:key (the entry is not shown: it may hold a key)`,
      );
    }
    const holder = keys.get(key);
    if (holder !== undefined && holder !== name) {
      throw new ApiKeysError(
        `${source}: entry ${position} gives client "${name}" the key of client "${holder}"; ` +
          `each key must be one client's`,
      );
    }
    keys.set(key, name);
  }
  return keys;
}

/** Variables the auth middleware sets for handlers. */
export interface AuthVariables {
  client: string;
}

/**
 * The one route that may carry its key as `?access_token=`: the burst upgrade, since
 * browsers cannot set headers on a WebSocket (routes/bursts.ts).
 */
const BURST_UPGRADE_PATH = /^\/v1\/compilations\/[^/]+\/burst$/;

/** Compares two SHA-256 digests in time independent of where they differ. */
function sameDigest(a: Uint8Array, b: Uint8Array): boolean {
  let difference = 0;
  for (let i = 0; i < 32; i++) difference |= a[i] ^ b[i];
  return difference === 0;
}

/**
 * Resolves the calling client or answers 401. Keys are compared as SHA-256 digests against
 * every configured key, each in constant time and without stopping at a match, so the time
 * taken says nothing about how much of a key was right nor which key it was.
 */
export function authenticate(keys: ApiKeys): MiddlewareHandler<{ Variables: AuthVariables }> {
  const identify = keyHolder(keys);
  return async (c, next) => {
    if (keys.size === 0) {
      c.set("client", ANONYMOUS_CLIENT);
      return await next();
    }
    const bearer = bearerKey(c.req.header("authorization"));
    const upgrade = c.req.method === "GET" && BURST_UPGRADE_PATH.test(c.req.path) &&
      c.req.header("upgrade")?.toLowerCase() === "websocket";
    const key = bearer ?? (upgrade ? c.req.query("access_token") : undefined);
    if (!key) {
      const misplaced = c.req.query("access_token") !== undefined;
      throw new DriverError(
        "UNAUTHORIZED",
        misplaced
          ? "access_token is accepted only on the burst WebSocket upgrade; send Authorization: Bearer <key>"
          : "missing bearer API key",
      );
    }
    c.set("client", identify(key));
    await next();
  };
}

/** The key of an `Authorization: Bearer <key>` value, if it is one. */
export function bearerKey(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1].trim();
}

/**
 * The client holding a key (the anonymous one when no keys are configured), or
 * UNAUTHORIZED: for every transport (HTTP's middleware, gRPC's metadata).
 */
export function keyHolder(keys: ApiKeys): (key: string | undefined) => string {
  const entries = [...keys].map(([key, client]) => ({ digest: sha256(key), client }));
  // Hashed into at once and compared before anything else runs: one array serves all.
  const presented = new Uint8Array(32);
  return (key) => {
    if (keys.size === 0) return ANONYMOUS_CLIENT;
    if (!key) throw new DriverError("UNAUTHORIZED", "missing bearer API key");
    sha256(key, presented);
    let client: string | undefined;
    for (const entry of entries) {
      if (sameDigest(entry.digest, presented)) client = entry.client;
    }
    if (client === undefined) throw new DriverError("UNAUTHORIZED", "unknown API key");
    return client;
  };
}
