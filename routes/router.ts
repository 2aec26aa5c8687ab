/** A router factory so every resource router reports schema errors the same way. */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { AuthVariables } from "./auth.ts";
import { errorResponse, schemaError } from "./errors.ts";

/** Hono environment of nnserve handlers. */
export interface AppEnv {
  Variables: AuthVariables;
}

/** A new OpenAPI router whose validation failures answer 400 INVALID_ARGUMENT with a path. */
export function newRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (!result.success) return errorResponse(c, schemaError(result.error, result.target));
      return undefined;
    },
  });
}
