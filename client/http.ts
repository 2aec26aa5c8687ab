/**
 * The SDK's one way to the service: authenticated fetch calls whose failures all surface
 * as `NnapiError`, carrying the NNAPI status of the error body (docs/api.md "Errors").
 */
import { ERROR_STATUSES, type ErrorStatus, type OutputShape } from "./types.ts";

/** A failed request: the service's NNAPI status, the HTTP status and the error body. */
export class NnapiError extends Error {
  /** NNAPI ErrorStatus of the error body (derived from the HTTP status if it has none). */
  readonly status: ErrorStatus;
  /** HTTP status; 0 when the service could not be reached. */
  readonly httpStatus: number;
  /** The parsed error body (or its text when it is not JSON). */
  readonly body: unknown;

  /** Made by the SDK from an error answer; `options.body` is the parsed error body. */
  constructor(
    status: ErrorStatus,
    httpStatus: number,
    message: string,
    options: { body?: unknown; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "NnapiError";
    this.status = status;
    this.httpStatus = httpStatus;
    this.body = options.body;
  }

  /** The offending field of an INVALID_ARGUMENT, when the service named one. */
  get path(): (string | number)[] | undefined {
    return field(this.body, "path") as (string | number)[] | undefined;
  }

  /** Every output's shape, reported with OUTPUT_INSUFFICIENT_SIZE. */
  get outputShapes(): OutputShape[] | undefined {
    return field(this.body, "outputShapes") as OutputShape[] | undefined;
  }
}

function field(body: unknown, name: string): unknown {
  return typeof body === "object" && body !== null && name in body
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

/** Whether a value read from the service (an error body, a control message) is a status name. */
export function isErrorStatus(value: unknown): value is ErrorStatus {
  return (ERROR_STATUSES as readonly unknown[]).includes(value);
}

/** What an error answer says, when it is an error body of the service (docs/api.md "Errors"). */
export interface ErrorBody {
  /** The parsed body, or its text when it is not JSON. */
  body: unknown;
  /** The body's NNAPI status, when it names one. */
  status?: ErrorStatus;
  message?: string;
}

/**
 * Reads the text of an error answer: the HTTP API's and a refused burst upgrade's alike,
 * so both surface the service's own status and message.
 */
export function readErrorBody(text: string): ErrorBody {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not an error body of the service: keep the text.
  }
  const status = field(body, "status");
  const message = field(body, "message");
  return {
    body,
    ...(isErrorStatus(status) ? { status } : {}),
    ...(typeof message === "string" ? { message } : {}),
  };
}

/**
 * Parses the JSON text of a 2xx answer to `what` (e.g. `POST /v1/memories`); text that is
 * not JSON throws NnapiError GENERAL_FAILURE carrying it, as any other failed request.
 */
export function parseAnswer<T>(text: string, answer: { what: string; httpStatus: number }): T {
  try {
    return JSON.parse(text) as T;
  } catch (error) {
    throw new NnapiError(
      "GENERAL_FAILURE",
      answer.httpStatus,
      `${answer.what}: the answer is not JSON`,
      { body: text, cause: error },
    );
  }
}

/** The status an error without an NNAPI body (a proxy's, say) stands for. */
function statusOfHttp(httpStatus: number): ErrorStatus {
  switch (httpStatus) {
    case 401:
    case 403:
      return "UNAUTHORIZED";
    case 404:
      return "NOT_FOUND";
    case 413:
      return "RESOURCE_EXHAUSTED_PERSISTENT";
    case 422:
      return "OUTPUT_INSUFFICIENT_SIZE";
    case 429:
      return "RESOURCE_EXHAUSTED_TRANSIENT";
    case 503:
      return "DEVICE_UNAVAILABLE";
    case 504:
      return "MISSED_DEADLINE_TRANSIENT";
    default:
      return httpStatus >= 400 && httpStatus < 500 ? "INVALID_ARGUMENT" : "GENERAL_FAILURE";
  }
}

/** Where the service is and who the client is. */
export interface TransportOptions {
  /** The service's root, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`; omit for a service running open. */
  apiKey?: string;
  /** A fetch to use instead of the global one (tests, custom agents). */
  fetch?: typeof fetch;
}

/** A request body: JSON, or raw bytes sent as `application/octet-stream`. */
export type RequestBody = { json: unknown } | { bytes: Uint8Array };

/** Sends requests to one service as one client. */
export class Transport {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /**
   * Sends a request and returns the response when it is 2xx; anything else, and a service
   * that cannot be reached, throws NnapiError. The caller owns the returned body.
   */
  async send(
    method: string,
    path: string,
    body?: RequestBody,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const init: RequestInit & { headers: Record<string, string> } = {
      method,
      headers: { ...headers },
    };
    if (this.#apiKey !== undefined) init.headers.authorization = `Bearer ${this.#apiKey}`;
    if (body && "json" in body) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body.json);
    } else if (body) {
      init.headers["content-type"] ??= "application/octet-stream";
      init.body = body.bytes as Uint8Array<ArrayBuffer>;
    }
    let response: Response;
    try {
      response = await this.#fetch(`${this.baseUrl}${path}`, init);
    } catch (error) {
      throw new NnapiError(
        "DEVICE_UNAVAILABLE",
        0,
        `${method} ${path}: cannot reach ${this.baseUrl}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (response.ok) return response;
    throw await errorOf(method, path, response);
  }

  /** Sends a request and parses its JSON answer (undefined for an empty answer, e.g. 204). */
  async json<T>(method: string, path: string, json?: unknown): Promise<T> {
    const response = await this.send(method, path, json === undefined ? undefined : { json });
    const text = await response.text();
    if (text === "") return undefined as T;
    return parseAnswer<T>(text, { what: `${method} ${path}`, httpStatus: response.status });
  }
}

async function errorOf(method: string, path: string, response: Response): Promise<NnapiError> {
  const { body, status, message } = readErrorBody(await response.text());
  return new NnapiError(
    status ?? statusOfHttp(response.status),
    response.status,
    message ?? `${method} ${path}: HTTP ${response.status} ${response.statusText}`,
    { body },
  );
}
