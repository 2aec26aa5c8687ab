/**
 * The routes that run models answered without the router: `POST
 * /v1/compilations/{id}/executions` and the Open Inference Protocol's `POST
 * /v2/models/{name}[/versions/{version}]/infer`, the service's busiest, where Hono's routing
 * and middleware chain cost a small model more than its execution (docs/performance.md,
 * "REST throughput"). The lane does what the middleware would, with the same functions: the
 * access log (routes/access_log.ts), the client's key (routes/auth.ts), the declared body's
 * limit (routes/request_body.ts); then the route's own handler (`answerExecution`,
 * `answerInference`), and errors answered as the router answers them (routes/errors.ts).
 *
 * The router keeps every request the lane does not take, and answers it the same way: a URL
 * with a query or an escaped character, a body without a declared length (chunked) or with a
 * Content-Encoding (inflated by the router's middleware), and every request while CORS is on
 * (its headers are the router's middleware's).
 */
import type { Service } from "../serving/service.ts";
import type { RequestLog } from "./access_log.ts";
import { ANONYMOUS_CLIENT, type ApiKeys, bearerKey, keyHolder } from "./auth.ts";
import { errorAnswer } from "./errors.ts";
import { answerExecution } from "./executions.ts";
import { type BodyLimits, bodyTooLarge } from "./request_body.ts";
import { JSON_MEDIA_TYPE } from "./schemas.ts";
import { answerInference } from "./v2/models.ts";

/** What the lane runs with: the service, the access log, the API keys and the body limits. */
export interface ExecutionLaneParts {
  service: Service;
  log: RequestLog;
  /** The clients' keys; none: the service is open, and no request's key is read. */
  keys: ApiKeys;
  limits: BodyLimits;
}

/** A route the lane answers. */
interface LaneRoute {
  /** The paths it takes: parameters of 1-200 characters, nothing escaped, no query. */
  path: RegExp;
  /** Its pattern as the router names it (the access log's `route`). */
  route: string;
  /** The pattern the router's access log names for a refusal by the key check. */
  keyAt: string;
  answer(
    parts: ExecutionLaneParts,
    client: string,
    params: string[],
    request: Request,
  ): Promise<Response>;
}

const ROUTES: readonly LaneRoute[] = [
  {
    path: /^\/v1\/compilations\/([^/?%]{1,200})\/executions$/,
    route: "/v1/compilations/:id/executions",
    keyAt: "/v1/*",
    answer: ({ service, limits }, client, [id], request) =>
      answerExecution(service.driver, { client, id, request }, limits.maxJsonBytes),
  },
  {
    path: /^\/v2\/models\/([^/?%]+)\/infer$/,
    route: "/v2/models/:name/infer",
    keyAt: "/v2/*",
    answer: ({ service, limits }, client, [name], request) =>
      answerInference(service, { client, name, request }, limits),
  },
  {
    path: /^\/v2\/models\/([^/?%]+)\/versions\/([^/?%]+)\/infer$/,
    route: "/v2/models/:name/versions/:version/infer",
    keyAt: "/v2/*",
    answer: ({ service, limits }, client, [name, version], request) =>
      answerInference(service, { client, name, version, request }, limits),
  },
];

/**
 * The router's access log names `unmatched` for a request the body limit refused (its
 * middleware is mounted on every path).
 */
const AT_BODY_LIMIT = "unmatched";

/** The lane: a request's answer, or undefined for one the router must answer. */
export function executionLane(
  parts: ExecutionLaneParts,
): (request: Request) => Promise<Response> | undefined {
  const identify = keyHolder(parts.keys);
  const open = parts.keys.size === 0;
  return (request) => {
    if (request.method !== "POST") return undefined;
    const url = request.url;
    const path = url.slice(url.indexOf("/", url.indexOf("://") + 3));
    for (const route of ROUTES) {
      const match = route.path.exec(path);
      if (!match) continue;
      const declared = request.headers.get("content-length");
      if (
        declared === null || request.headers.has("transfer-encoding") ||
        request.headers.has("content-encoding")
      ) return undefined;
      return answer(parts, route, request, {
        params: match.slice(1),
        path,
        declared: Number(declared),
        identify: open ? undefined : identify,
      });
    }
    return undefined;
  };
}

async function answer(
  parts: ExecutionLaneParts,
  route: LaneRoute,
  request: Request,
  { params, path, declared, identify }: {
    params: string[];
    path: string;
    declared: number;
    /** The key check; none for an open service. */
    identify?: (key: string | undefined) => string;
  },
): Promise<Response> {
  const { service, log, limits } = parts;
  const started = performance.now();
  const requestId = log.requestId(request.headers.get("x-request-id"));
  let client: string | null = null;
  let at = route.keyAt;
  let response: Response;
  try {
    client = identify
      ? identify(bearerKey(request.headers.get("authorization") ?? undefined))
      : ANONYMOUS_CLIENT;
    at = AT_BODY_LIMIT;
    const isJson = JSON_MEDIA_TYPE.test(request.headers.get("content-type") ?? "");
    if (declared > (isJson ? limits.maxJsonBytes : limits.maxBytes)) {
      throw bodyTooLarge(limits, isJson);
    }
    at = route.route;
    response = await route.answer(parts, client, params, request);
  } catch (error) {
    service.driver.countRefusal(error);
    const { status, headers, body } = errorAnswer(error, request.method, path);
    response = Response.json(body, { status, headers });
  }
  log.finish(response, { method: request.method, route: at, path, client, requestId, started });
  return response;
}
