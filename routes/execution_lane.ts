/**
 * `POST /v1/compilations/{id}/executions` answered without the router: the service's busiest
 * route, where Hono's routing and middleware chain cost a small model more than its
 * execution (docs/performance.md, "REST throughput"). The lane does what the middleware
 * would, with the same functions: the access log (routes/access_log.ts), the client's key
 * (routes/auth.ts), the declared body's limit (routes/app.ts); then the route's own
 * `answerExecution`, and errors answered as the router answers them (routes/errors.ts).
 *
 * The router keeps every request the lane does not take, and answers it the same way: a URL
 * with a query or an escaped character, a body without a declared length (chunked), and
 * every request while CORS is on (its headers are the router's middleware's).
 */
import type { Driver } from "../driver/driver.ts";
import type { RequestLog } from "./access_log.ts";
import { type BodyLimits, bodyTooLarge } from "./request_body.ts";
import { bearerKey } from "./auth.ts";
import { errorAnswer } from "./errors.ts";
import { answerExecution } from "./executions.ts";
import { JSON_MEDIA_TYPE } from "./schemas.ts";

/** The route's pattern, as the router names it (the access log's `route`). */
const ROUTE = "/v1/compilations/:id/executions";

/** A path the lane takes: an id of 1-200 characters, nothing escaped, no query. */
const LANE_PATH = /^\/v1\/compilations\/([^/?%]{1,200})\/executions$/;

/**
 * The route the router's access log names for a request refused before its route ran: the
 * pattern of the middleware that refused it (the key's, `/v1/*`), `unmatched` for the body
 * limit's (mounted on every path).
 */
const AT_KEY = "/v1/*";
const AT_BODY_LIMIT = "unmatched";

/** What the lane runs with: the driver, the access log, the key check and the body limits. */
export interface ExecutionLaneParts {
  driver: Driver;
  log: RequestLog;
  /** The client holding a bearer key (routes/auth.ts `keyHolder`). */
  identify: (key: string | undefined) => Promise<string>;
  limits: BodyLimits;
}

/** The lane: a request's answer, or undefined for one the router must answer. */
export function executionLane(
  parts: ExecutionLaneParts,
): (request: Request) => Promise<Response> | undefined {
  return (request) => {
    if (request.method !== "POST") return undefined;
    const url = request.url;
    const path = url.slice(url.indexOf("/", url.indexOf("://") + 3));
    const match = LANE_PATH.exec(path);
    if (!match) return undefined;
    const declared = request.headers.get("content-length");
    if (declared === null || request.headers.has("transfer-encoding")) return undefined;
    return answer(parts, request, { id: match[1], path, declared: Number(declared) });
  };
}

async function answer(
  { driver, log, identify, limits }: ExecutionLaneParts,
  request: Request,
  { id, path, declared }: { id: string; path: string; declared: number },
): Promise<Response> {
  const started = performance.now();
  const requestId = log.requestId(request.headers.get("x-request-id"));
  let client: string | null = null;
  let route = AT_KEY;
  let response: Response;
  try {
    client = await identify(bearerKey(request.headers.get("authorization") ?? undefined));
    route = AT_BODY_LIMIT;
    const isJson = JSON_MEDIA_TYPE.test(request.headers.get("content-type") ?? "");
    if (declared > (isJson ? limits.maxJsonBytes : limits.maxBytes)) {
      throw bodyTooLarge(limits, isJson);
    }
    route = ROUTE;
    response = await answerExecution(driver, { client, id, request }, limits.maxJsonBytes);
  } catch (error) {
    driver.countRefusal(error);
    const { status, headers, body } = errorAnswer(error, request.method, path);
    response = Response.json(body, { status, headers });
  }
  log.finish(response, { method: request.method, route, path, client, requestId, started });
  return response;
}
