/**
 * One structured line per request, and its duration in `/metrics`: every request gets a
 * request id (the client's `X-Request-Id` when it is a plausible one, else a new UUID),
 * echoed in the answer; the duration is observed in
 * `nnserve_http_request_duration_seconds{method,route,status}` and, at the configured level,
 * a JSON line (time, level, replica, request id, client, method, route, path, status, ms)
 * goes to the log: `info` for every request, `warn` for 4xx, `error` for 5xx. Every answer
 * says which replica gave it (`X-Nnserve-Replica`), for requests through a balancer.
 */
import type { MiddlewareHandler } from "hono";
import type { Metrics } from "../metrics/metrics.ts";

/** Log levels, most verbose first; `off` logs nothing. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "off"] as const;
export type LogLevel = typeof LOG_LEVELS[number];

/** Where log lines go. */
export type LogSink = (line: string) => void;

/** A sink that can write out what it holds at once (at shutdown). */
export interface BufferedSink {
  sink: LogSink;
  flush(): void;
}

/**
 * Lines to stdout a batch at a time: those of one turn of the event loop (tens under load)
 * leave in one write where `console.log` would make one each (under load that was about a
 * tenth of the event loop's time). Each batch is one synchronous write, as `console.log`
 * is, so lines stay whole and in order with the service's other output; a line waits at
 * most until the next timer turn, and `flush` writes what waits.
 */
export function batchedStdout(): BufferedSink {
  const encoder = new TextEncoder();
  let pending: string[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const bytes = encoder.encode(`${pending.join("\n")}\n`);
    pending = [];
    for (let written = 0; written < bytes.length;) {
      written += Deno.stdout.writeSync(bytes.subarray(written));
    }
  };
  return {
    sink(line) {
      pending.push(line);
      timer ??= setTimeout(flush, 0);
    },
    flush,
  };
}

/** A client's request id is kept when it is 1-200 visible ASCII characters. */
const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

/** The access log and duration histogram. */
export function accessLog(
  metrics: Metrics,
  options: { level: LogLevel; sink: LogSink; replica: string },
): MiddlewareHandler {
  const threshold = LOG_LEVELS.indexOf(options.level);
  return async (c, next) => {
    const started = performance.now();
    const given = c.req.header("x-request-id");
    const requestId = given !== undefined && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    await next();
    c.res.headers.set("X-Request-Id", requestId);
    c.res.headers.set("X-Nnserve-Replica", options.replica);
    const ms = performance.now() - started;
    const status = c.res.status;
    const route = c.req.routePath === "/*" ? "unmatched" : c.req.routePath;
    metrics.observe(
      "nnserve_http_request_duration_seconds",
      "HTTP request duration by method, route and status",
      { method: c.req.method, route, status: String(status) },
      ms / 1000,
    );
    const level = status >= 500 ? "error" : status >= 400 ? "warn" : "info";
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    options.sink(JSON.stringify({
      time: new Date().toISOString(),
      level,
      msg: "request",
      replica: options.replica,
      requestId,
      client: (c.get as (key: string) => unknown)("client") ?? null,
      method: c.req.method,
      route,
      path: c.req.path,
      status,
      ms: Math.round(ms * 1000) / 1000,
    }));
  };
}
