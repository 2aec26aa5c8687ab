/**
 * Clients and API keys (API.md "Clients and authentication"): each bearer key is one
 * client; with no keys the service is open and everyone is the anonymous client.
 */
import type { MiddlewareHandler } from "hono";
import { DriverError } from "../nnapi/errors.ts";

/** Client name by API key. */
export type ApiKeys = Map<string, string>;

/** The client name used when no keys are configured. */
export const ANONYMOUS_CLIENT = "anonymous";

/** Parses `name:key` pairs separated by commas or newlines; blank entries are skipped. */
export function parseApiKeys(text: string): ApiKeys {
  const keys: ApiKeys = new Map();
  for (const entry of text.split(/[,\n]/).map((s) => s.trim()).filter(Boolean)) {
    const colon = entry.indexOf(":");
    if (colon <= 0 || colon === entry.length - 1) {
      throw new Error(`API key entry "${entry.slice(0, 20)}" is not name:key`);
    }
    keys.set(entry.slice(colon + 1), entry.slice(0, colon));
  }
  return keys;
}

/** Variables the auth middleware sets for handlers. */
export interface AuthVariables {
  client: string;
}

/** Resolves the calling client or answers 401. */
export function authenticate(keys: ApiKeys): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    if (keys.size === 0) {
      c.set("client", ANONYMOUS_CLIENT);
      return await next();
    }
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(.+)$/i.exec(header);
    // Browsers cannot set headers on a WebSocket: an upgrade may carry ?access_token=.
    const upgrade = c.req.header("upgrade")?.toLowerCase() === "websocket";
    const key = match?.[1].trim() ?? (upgrade ? c.req.query("access_token") : undefined);
    const client = key ? keys.get(key) : undefined;
    if (!client) {
      throw new DriverError("UNAUTHORIZED", key ? "unknown API key" : "missing bearer API key");
    }
    c.set("client", client);
    await next();
  };
}
