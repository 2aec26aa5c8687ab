/**
 * `POST /v1/compilations/{id}/executions`: synchronous execution with inline data, memory
 * regions or driver-managed buffers.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../nnapi/errors.ts";
import type { InputArgument, OutputArgument } from "../driver/execution/request.ts";
import { toBytes, toJsonNumbers } from "../nnapi/tensor.ts";
import {
  acceptsOctetStream,
  BinarySections,
  framedResponse,
  INFERENCE_HEADER_LENGTH,
  OCTET_STREAM,
  parseDimensionList,
  splitFramedBody,
} from "./binary_tensors.ts";
import { schemaError } from "./errors.ts";
import { EXECUTION_REQUEST, EXECUTION_RESULT } from "./examples.ts";
import { newRouter } from "./router.ts";
import {
  type Argument,
  CompilationIdParams,
  errorResponses,
  ExecutionBody,
  ExecutionRequest,
  JSON_MEDIA_TYPE,
  RawExecutionQuery,
} from "./schemas.ts";

const execute = createRoute({
  method: "post",
  path: "/v1/compilations/{id}/executions",
  summary: "Run one synchronous execution",
  description: "The body is JSON (ExecutionRequest); or a framed binary body: " +
    "`Inference-Header-Content-Length` bytes of JSON header (ExecutionRequest whose inputs " +
    "may say `parameters.binary_data_size`), then those inputs' bytes back to back (the " +
    "KServe/Triton binary tensor extension); or, for a single-input model, " +
    "`application/octet-stream` with the input's bytes (options in the query). " +
    "`outputEncoding: binary` answers framed; `Accept: application/octet-stream` answers " +
    "a single output's bytes raw (`Output-Dimensions` header), several outputs framed.",
  request: {
    params: CompilationIdParams,
    query: RawExecutionQuery,
    headers: z.object({
      "inference-header-content-length": z.string().optional().openapi({
        description: "Framed binary bodies: the length of the leading JSON header",
      }),
      "input-dimensions": z.string().optional().openapi({
        description: "application/octet-stream bodies: the input's dimensions, e.g. 1,224,224,3",
      }),
    }),
    body: {
      // The handler reads and validates every form itself. A zod schema here would make the
      // router refuse bodies without a Content-Type, which framed bodies may lack (as
      // tritonclient sends them); the schema is documented by reference instead.
      required: true,
      content: {
        "application/json": {
          schema: { $ref: "#/components/schemas/ExecutionRequest" },
          example: EXECUTION_REQUEST,
        },
        [OCTET_STREAM]: {
          schema: z.string().openapi({
            format: "binary",
            description: `With ${INFERENCE_HEADER_LENGTH}: a framed binary body, that many ` +
              "bytes of JSON header (an ExecutionRequest) then the bytes of each input whose " +
              "header says parameters.binary_data_size, back to back in input order. " +
              "Without it: the one input of a single-input model, its raw bytes. Tensor " +
              "bytes are little-endian and densely packed in the operand's element type",
          }),
        },
      },
    },
  },
  responses: {
    200: {
      description: "Outputs, output shapes and timing; binary when asked",
      headers: z.object({
        [INFERENCE_HEADER_LENGTH]: z.string().optional().openapi({
          description: "Framed binary answers: the length of the leading JSON header",
        }),
        "Output-Dimensions": z.string().optional().openapi({
          description: "Raw single-output answers: the output's dimensions, e.g. 1,1000",
        }),
        "Output-Name": z.string().optional().openapi({
          description: "Raw single-output answers: the output's name (imported models)",
        }),
        "Server-Timing": z.string().optional().openapi({
          description: "Raw single-output answers with measureTiming: device and driver time",
        }),
      }),
      content: {
        "application/json": { schema: ExecutionBody, example: EXECUTION_RESULT },
        [OCTET_STREAM]: {
          schema: z.string().openapi({
            format: "binary",
            description: "With Accept: application/octet-stream and one output, returned " +
              "inline: its raw bytes (Output-Dimensions, Output-Name). Otherwise, with that " +
              `Accept or outputEncoding binary: a framed answer, ${INFERENCE_HEADER_LENGTH} ` +
              "bytes of JSON header (an ExecutionResult whose inline outputs say " +
              "parameters.binary_data_size; padded with spaces to a multiple of 8 bytes) " +
              "then those outputs' bytes back to back. Tensor bytes are little-endian and " +
              "densely packed in the operand's element type",
          }),
        },
      },
    },
    ...errorResponses(400, 401, 404, 413, 422, 429, 504),
  },
});

type Arg = z.infer<typeof Argument>;

function decodeBase64(text: string, path: (string | number)[]): Uint8Array {
  try {
    return Uint8Array.fromBase64(text);
  } catch {
    throw invalid(`${path.join(".")}: not valid base64`, { path });
  }
}

/**
 * Translates a wire ARG into the driver's input argument. `binary` holds the bytes after
 * the header of a framed body; absent for a JSON body.
 */
function inputArgument(arg: Arg, k: number | string, binary?: BinarySections): InputArgument {
  const path = ["inputs", k];
  const { dimensions } = arg;
  if (arg.omitted) return { value: { kind: "omitted" } };
  if (arg.parameters !== undefined) {
    if (!binary) {
      throw invalid(
        `${path.join(".")}.parameters.binary_data_size: only a framed binary body ` +
          `(${INFERENCE_HEADER_LENGTH}) has binary data`,
        { path: [...path, "parameters"] },
      );
    }
    const bytes = binary.take(arg.parameters.binary_data_size, [...path, "parameters"]);
    return { value: { kind: "bytes", bytes }, dimensions };
  }
  if (arg.data !== undefined) return { value: { kind: "numbers", values: arg.data }, dimensions };
  if (arg.base64 !== undefined) {
    const bytes = decodeBase64(arg.base64, [...path, "base64"]);
    return { value: { kind: "bytes", bytes }, dimensions };
  }
  if (arg.memory !== undefined) {
    const { memory, offset = 0, length = 0 } = arg;
    return { value: { kind: "memory", memory, offset, length }, dimensions };
  }
  if (arg.buffer !== undefined) return { value: { kind: "buffer", token: arg.buffer } };
  throw invalid(`input ${k} has no value: give data, base64, memory, buffer or omitted`, {
    path,
  });
}

function outputArgument(arg: Arg, k: number): OutputArgument {
  const path = ["outputs", k];
  const { dimensions } = arg;
  if (arg.memory !== undefined) {
    const { memory, offset = 0, length = 0 } = arg;
    return { dimensions, target: { kind: "memory", memory, offset, length } };
  }
  if (arg.buffer !== undefined) return { target: { kind: "buffer", token: arg.buffer } };
  if (
    arg.data !== undefined || arg.base64 !== undefined || arg.omitted ||
    arg.parameters !== undefined
  ) {
    throw invalid(`output ${k}: an output takes only dimensions (or a memory region)`, { path });
  }
  return { dimensions };
}

type ExecutionJson = z.infer<typeof ExecutionRequest>;

/** Whether a JSON value is an array of finite numbers. */
function isFiniteNumbers(value: unknown): value is number[] {
  if (!Array.isArray(value)) return false;
  for (let at = 0; at < value.length; at++) {
    const v = value[at];
    if (typeof v !== "number" || !Number.isFinite(v)) return false;
  }
  return true;
}

/**
 * Validates an execution request. The commonest form, `{"inputs": [{"data": [...]}, ...]}`
 * with finite numbers only, is recognized by hand (zod's output would equal it): its zod
 * parse cost a tiny execution several microseconds. Every other body gets zod's full check.
 */
export function parseExecutionRequest(
  value: unknown,
): ReturnType<typeof ExecutionRequest.safeParse> {
  if (isPlainExecution(value)) return { success: true, data: value };
  return ExecutionRequest.safeParse(value);
}

/** `{"inputs": [{"data": [finite numbers]}, ...]}` and nothing else. */
function isPlainExecution(value: unknown): value is ExecutionJson {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  let keys = 0;
  for (const _ in value) keys++;
  const inputs = (value as { inputs?: unknown }).inputs;
  if (keys !== 1 || !Array.isArray(inputs)) return false;
  for (const input of inputs) {
    if (typeof input !== "object" || input === null || Array.isArray(input)) return false;
    let inputKeys = 0;
    for (const _ in input) inputKeys++;
    if (inputKeys !== 1 || !isFiniteNumbers((input as { data?: unknown }).data)) return false;
  }
  return true;
}

/** What the handler runs, read from whichever body form the request has. */
interface ReadRequest {
  body: ExecutionJson;
  binary?: BinarySections;
}

/**
 * Reads a framed binary or raw single-input body; a JSON body is left to the caller as the
 * promise of its value (`json`), to await itself (an awaited layer less for the commonest
 * form: about half a microsecond of a tiny execution under load).
 */
function readRequest(
  request: Request,
  queryParams: Record<string, string> | undefined,
  maxHeaderBytes: number,
): { json: Promise<unknown> } | Promise<ReadRequest> {
  const framedLength = request.headers.get(INFERENCE_HEADER_LENGTH) ?? undefined;
  const contentType = request.headers.get("content-type") ?? "";
  const query = queryParams && RawExecutionQuery.safeParse(queryParams);
  if (query?.success === false) throw schemaError(query.error, "query");
  if (framedLength !== undefined) return readFramed(request, framedLength, maxHeaderBytes);
  if (JSON_MEDIA_TYPE.test(contentType)) return { json: request.json() };
  if (contentType.toLowerCase().startsWith(OCTET_STREAM)) return readOctets(request, query?.data);
  throw invalid(
    "send the execution as application/json, as a framed binary body " +
      `(${INFERENCE_HEADER_LENGTH}), or a single input's bytes as ${OCTET_STREAM}`,
  );
}

/** A JSON body's value as the execution it asks for. */
function jsonRequest(value: unknown): ReadRequest {
  const parsed = parseExecutionRequest(value);
  if (!parsed.success) throw schemaError(parsed.error, "json");
  return { body: parsed.data };
}

/** A framed binary body: its JSON header and the binary sections after it. */
async function readFramed(
  request: Request,
  framedLength: string,
  maxHeaderBytes: number,
): Promise<ReadRequest> {
  const framed = splitFramedBody(await request.arrayBuffer(), framedLength, maxHeaderBytes);
  const parsed = ExecutionRequest.safeParse(framed.header);
  if (!parsed.success) throw schemaError(parsed.error, "header");
  return { body: parsed.data, binary: new BinarySections(framed.binary) };
}

/** A single input's raw bytes, its dimensions and options from the query or headers. */
async function readOctets(
  request: Request,
  query: z.infer<typeof RawExecutionQuery> | undefined,
): Promise<ReadRequest> {
  const { dimensions, outputEncoding, measureTiming, deadlineMs } = query ?? {};
  const dimensionText = dimensions ?? request.headers.get("input-dimensions") ?? undefined;
  const bytes = new Uint8Array(await request.arrayBuffer());
  return {
    body: {
      inputs: [{
        parameters: { binary_data_size: bytes.byteLength },
        ...(dimensionText === undefined
          ? {}
          : { dimensions: parseDimensionList(dimensionText, "dimensions") }),
      }],
      outputEncoding,
      measureTiming: measureTiming === "true",
      deadlineMs,
    },
    binary: new BinarySections(bytes),
  };
}

/** Execution routes. */
export function executionRoutes(driver: Driver, options: { maxJsonBytes: number }) {
  const router = newRouter();
  router.openAPIRegistry.register("ExecutionRequest", ExecutionRequest);
  // The query and headers are documented, and read by the handler where they apply: a
  // validator per request for each cost a tiny execution 4 of its 26 µs in the service.
  router.openAPIRegistry.registerPath(execute);
  const { params, body } = execute.request;
  return router.openapi(
    { ...execute, hide: true, request: { params, body } },
    (c) =>
      answerExecution(driver, {
        client: c.get("client"),
        id: c.req.valid("param").id,
        request: c.req.raw,
        query: c.req.url.includes("?") ? c.req.query() : undefined,
      }, options.maxJsonBytes),
  );
}

/** An execution as the route receives it: the client, the compilation and the request. */
export interface ExecutionCall {
  client: string;
  id: string;
  request: Request;
  /** The query's parameters, when the URL has a query. */
  query?: Record<string, string>;
}

/**
 * Runs the execution a request asks for and answers it: JSON, framed binary, or one output's
 * raw bytes (for the router's route and the execution lane alike).
 */
export async function answerExecution(
  driver: Driver,
  call: ExecutionCall,
  maxJsonBytes: number,
): Promise<Response> {
  const reading = readRequest(call.request, call.query, maxJsonBytes);
  const { body, binary } = reading instanceof Promise
    ? await reading
    : jsonRequest(await reading.json);
  const inputs = Array.isArray(body.inputs)
    ? body.inputs.map((arg, k) => inputArgument(arg, k, binary))
    : Object.fromEntries(
      Object.entries(body.inputs).map(([name, arg]) => [name, inputArgument(arg, name, binary)]),
    );
  binary?.finish();
  const result = await driver.execute(call.client, call.id, {
    inputs,
    outputs: body.outputs?.map(outputArgument),
    measureTiming: body.measureTiming,
    deadlineMs: body.deadlineMs,
    loopTimeoutMs: body.loopTimeoutMs,
  });
  const named = (o: { name?: string }) => (o.name === undefined ? {} : { name: o.name });
  const timing = result.timing ? { timing: result.timing } : {};
  const inline = result.outputs.filter((o) => o.data);
  const raw = acceptsOctetStream(call.request.headers.get("accept") ?? undefined);
  if (raw && inline.length === 1 && result.outputs.length === 1) {
    const [only] = result.outputs;
    return new Response(toBytes(only.data!) as Uint8Array<ArrayBuffer>, {
      headers: {
        "content-type": OCTET_STREAM,
        "output-dimensions": only.shape.join(","),
        ...(only.name === undefined ? {} : { "output-name": only.name }),
        ...(result.timing ? { "server-timing": serverTiming(result.timing) } : {}),
      },
    });
  }
  if (raw || body.outputEncoding === "binary") {
    const header = {
      status: "NONE",
      outputs: result.outputs.map((o) => ({
        ...named(o),
        dimensions: o.shape,
        ...(o.data ? { parameters: { binary_data_size: o.data.byteLength } } : {}),
      })),
      outputShapes: result.outputShapes,
      ...timing,
    };
    return framedResponse(header, inline.map((o) => toBytes(o.data!)));
  }
  const base64 = body.outputEncoding === "base64";
  return Response.json({
    status: "NONE" as const,
    outputs: result.outputs.map((o) => ({
      ...named(o),
      ...(!o.data
        ? { dimensions: o.shape }
        : base64
        ? { dimensions: o.shape, base64: toBytes(o.data).toBase64() }
        : { dimensions: o.shape, data: toJsonNumbers(o.data) }),
    })),
    outputShapes: result.outputShapes,
    ...timing,
  });
}

/** Timing as a Server-Timing header (durations in ms), for answers without a JSON body. */
function serverTiming(timing: { onDeviceUs: number; inDriverUs: number }): string {
  return `device;dur=${timing.onDeviceUs / 1000}, driver;dur=${timing.inDriverUs / 1000}`;
}
