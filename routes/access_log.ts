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

/**
 * The time of a log line, ISO 8601 to the millisecond: formatted once a millisecond (a
 * `toISOString` costs about half a microsecond, and a busy service logs several lines each
 * millisecond).
 */
function isoNow(): string {
  const ms = Date.now();
  if (ms !== formatted.ms) formatted = { ms, text: new Date(ms).toISOString() };
  return formatted.text;
}
let formatted = { ms: 0, text: "" };

/** A client's request id is kept when it is 1-200 visible ASCII characters. */
const REQUEST_ID = /^[\x21-\x7e]{1,200}$/;

/** A request as the access log records it once it is answered. */
export interface LoggedRequest {
  method: string;
  /** The route's pattern (`/v1/compilations/:id/executions`), or `unmatched`. */
  route: string;
  path: string;
  client: string | null;
  requestId: string;
  /** When it began (`performance.now()`). */
  started: number;
}

/** The methods the duration histogram names; it labels any other `other`. */
const LABELED_METHODS = new Set([
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
]);

/**
 * A request's method as the duration histogram labels it: a standard method by its name,
 * any other `other` (a client sending made-up methods must not add series without end).
 */
export function methodLabel(method: string): string {
  return LABELED_METHODS.has(method) ? method : "other";
}

/**
 * The access log and duration histogram, for the router's middleware ({@link accessLog}) and
 * for the routes served without the router (routes/execution_lane.ts) alike.
 */
export class RequestLog {
  readonly #metrics: Metrics;
  readonly #threshold: number;
  readonly #sink: LogSink;
  readonly #replica: string;
  /**
   * The duration histogram's series by route, method label and status, each found once
   * (labels looked up per request were a few tenths of a microsecond of a tiny execution).
   */
  readonly #durations = new Map<string, Map<string, Map<number, (seconds: number) => void>>>();

  constructor(metrics: Metrics, options: { level: LogLevel; sink: LogSink; replica: string }) {
    this.#metrics = metrics;
    this.#threshold = LOG_LEVELS.indexOf(options.level);
    this.#sink = options.sink;
    this.#replica = options.replica;
  }

  /** The id of a request: the client's `X-Request-Id` when it is a plausible one, else new. */
  requestId(given: string | null | undefined): string {
    return given != null && REQUEST_ID.test(given) ? given : crypto.randomUUID();
  }

  /** Records an answered request: its headers on the response, the histogram, the line. */
  finish(response: Response, request: LoggedRequest): void {
    response.headers.set("X-Request-Id", request.requestId);
    response.headers.set("X-Nnserve-Replica", this.#replica);
    const ms = performance.now() - request.started;
    const status = response.status;
    this.#duration(request.route, methodLabel(request.method), status)(ms / 1000);
    const level = status >= 500 ? "error" : status >= 400 ? "warn" : "info";
    if (LOG_LEVELS.indexOf(level) < this.#threshold) return;
    this.#sink(accessLine(isoNow(), level, this.#replica, request, status, ms));
  }

  /** The duration series of a route, method label and status (routes and statuses are few). */
  #duration(route: string, method: string, status: number): (seconds: number) => void {
    let byMethod = this.#durations.get(route);
    if (!byMethod) this.#durations.set(route, byMethod = new Map());
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, byStatus = new Map());
    let series = byStatus.get(status);
    if (!series) {
      series = this.#metrics.series(
        "nnserve_http_request_duration_seconds",
        "HTTP request duration by method, route and status",
        { method, route, status: String(status) },
      );
      byStatus.set(status, series);
    }
    return series;
  }
}

/** Characters JSON.stringify escapes in a string: quote, backslash, controls, surrogates. */
// deno-lint-ignore no-control-regex -- control characters are what JSON escapes
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A string (or null) as JSON: quoted as it is when nothing in it needs escaping (the common
 * case, without a call into the runtime's JSON.stringify), else `JSON.stringify`'s.
 */
function jsonString(value: string | null): string {
  if (value === null) return "null";
  return ESCAPED.test(value) ? JSON.stringify(value) : `"${value}"`;
}

/**
 * The JSON line of an answered request: what `JSON.stringify` makes of the record (time,
 * level, msg, replica, requestId, client, method, route, path, status, ms), built from its
 * fields' own encodings (about a microsecond less than stringifying the record, once a
 * request).
 */
export function accessLine(
  time: string,
  level: string,
  replica: string,
  request: Omit<LoggedRequest, "started">,
  status: number,
  ms: number,
): string {
  const json = jsonString;
  return `{"time":"${time}","level":"${level}","msg":"request","replica":${json(replica)},` +
    `"requestId":${json(request.requestId)},"client":${json(request.client)},` +
    `"method":${json(request.method)},"route":${json(request.route)},` +
    `"path":${json(request.path)},"status":${status},"ms":${Math.round(ms * 1000) / 1000}}`;
}

/** The access log as the router's middleware. */
export function accessLog(log: RequestLog): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    const requestId = log.requestId(c.req.header("x-request-id"));
    await next();
    log.finish(c.res, {
      method: c.req.method,
      route: c.req.routePath === "/*" ? "unmatched" : c.req.routePath,
      path: c.req.path,
      client: ((c.get as (key: string) => unknown)("client") as string | undefined) ?? null,
      requestId,
      started,
    });
  };
}
