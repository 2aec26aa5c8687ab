/**
 * `POST /v1/compilations/{id}/executions`: synchronous execution with inline data, memory
 * regions or driver-managed buffers.
 */
import { createRoute, type z } from "@hono/zod-openapi";
import type { Driver } from "../driver/driver.ts";
import { invalid } from "../nnapi/errors.ts";
import type { InputArgument, OutputArgument } from "../driver/execution.ts";
import { toBytes, toNumbers } from "../nnapi/tensor.ts";
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
function inputArgument(arg: Arg, k: number): InputArgument {
  const path = ["inputs", k];
  if ("omitted" in arg) return { value: { kind: "omitted" } };
  if ("data" in arg) {
    return { value: { kind: "numbers", values: arg.data }, dimensions: arg.dimensions };
  }
  if ("base64" in arg) {
    return {
      value: { kind: "bytes", bytes: decodeBase64(arg.base64, [...path, "base64"]) },
      dimensions: arg.dimensions,
    };
  }
  if ("memory" in arg) {
    const { memory, offset, length } = arg;
    return { value: { kind: "memory", memory, offset, length }, dimensions: arg.dimensions };
  }
  if ("buffer" in arg) return { value: { kind: "buffer", token: arg.buffer } };
  throw invalid(`input ${k} has no value: give data, base64 or omitted`, { path });
}

function outputArgument(arg: Arg, k: number): OutputArgument {
  const path = ["outputs", k];
  if ("memory" in arg) {
    const { memory, offset, length } = arg;
    return { dimensions: arg.dimensions, target: { kind: "memory", memory, offset, length } };
  }
  if ("buffer" in arg) return { target: { kind: "buffer", token: arg.buffer } };
  if ("data" in arg || "base64" in arg || "omitted" in arg) {
    throw invalid(`output ${k}: an output takes only dimensions (or a memory region)`, { path });
  }
  return { dimensions: arg.dimensions };
}

/** Execution routes. */
export function executionRoutes(driver: Driver) {
  return newRouter().openapi(execute, async (c) => {
    const body = c.req.valid("json");
    const result = await driver.execute(c.get("client"), c.req.valid("param").id, {
      inputs: body.inputs.map(inputArgument),
      outputs: body.outputs?.map(outputArgument),
      measureTiming: body.measureTiming,
      deadlineMs: body.deadlineMs,
    });
    const base64 = body.outputEncoding === "base64";
    return c.json({
      status: "NONE" as const,
      outputs: result.outputs.map((o) =>
        !o.data
          ? { dimensions: o.shape }
          : base64
          ? { dimensions: o.shape, base64: toBytes(o.data).toBase64() }
          : { dimensions: o.shape, data: toNumbers(o.data) }
      ),
      outputShapes: result.outputShapes,
      ...(result.timing ? { timing: result.timing } : {}),
    }, 200);
  });
}
