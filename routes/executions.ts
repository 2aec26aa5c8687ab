/**
 * `POST /v1/compilations/{id}/executions`: synchronous execution with inline data, memory
 * regions or driver-managed buffers.
 */
import { createRoute, type z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../nnapi/errors.ts";
import type { InputArgument, OutputArgument } from "../driver/execution.ts";
import { toBytes, toJsonNumbers } from "../nnapi/tensor.ts";
import { newRouter } from "./router.ts";
import {
  type Argument,
  errorResponses,
  ExecutionBody,
  ExecutionRequest,
  IdParams,
  jsonBody,
  jsonResponse,
} from "./schemas.ts";

const execute = createRoute({
  method: "post",
  path: "/v1/compilations/{id}/executions",
  summary: "Run one synchronous execution",
  request: { params: IdParams, ...jsonBody(ExecutionRequest) },
  responses: {
    200: jsonResponse(ExecutionBody, "Outputs, output shapes and timing"),
    ...errorResponses(400, 401, 404, 422, 504),
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

/** Translates a wire ARG into the driver's input argument. */
function inputArgument(arg: Arg, k: number | string): InputArgument {
  const path = ["inputs", k];
  const { dimensions } = arg;
  if (arg.omitted) return { value: { kind: "omitted" } };
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
  if (arg.data !== undefined || arg.base64 !== undefined || arg.omitted) {
    throw invalid(`output ${k}: an output takes only dimensions (or a memory region)`, { path });
  }
  return { dimensions };
}

/** Execution routes. */
export function executionRoutes(driver: Driver) {
  return newRouter().openapi(execute, async (c) => {
    const body = c.req.valid("json");
    const result = await driver.execute(c.get("client"), c.req.valid("param").id, {
      inputs: Array.isArray(body.inputs) ? body.inputs.map(inputArgument) : Object.fromEntries(
        Object.entries(body.inputs).map(([name, arg]) => [name, inputArgument(arg, name)]),
      ),
      outputs: body.outputs?.map(outputArgument),
      measureTiming: body.measureTiming,
      deadlineMs: body.deadlineMs,
      loopTimeoutMs: body.loopTimeoutMs,
    });
    const base64 = body.outputEncoding === "base64";
    return c.json({
      status: "NONE" as const,
      outputs: result.outputs.map((o) => ({
        ...(o.name === undefined ? {} : { name: o.name }),
        ...(!o.data
          ? { dimensions: o.shape }
          : base64
          ? { dimensions: o.shape, base64: toBytes(o.data).toBase64() }
          : { dimensions: o.shape, data: toJsonNumbers(o.data) }),
      })),
      outputShapes: result.outputShapes,
      ...(result.timing ? { timing: result.timing } : {}),
    }, 200);
  });
}
