/**
 * Runs a converted ONNX graph in nnserve (registered, compiled and executed over HTTP) and
 * in onnxruntime-node on the same seeded inputs, and compares every output.
 */
import { deepStrictEqual, match, strictEqual } from "node:assert/strict";
import { type CompareOptions, compareWithOnnxRuntime } from "../../tools/onnx_compare.ts";
import type { TestServer } from "../server_fixture.ts";
import type { OnnxConversion } from "../../converter/onnx/convert.ts";
import {
  assertClose,
  type GraphSpec,
  type NodeSpec,
  onnxBytes,
  seeded,
  type ValueSpec,
} from "../../tools/onnx_graphs.ts";

/** Converts, runs in nnserve and in onnxruntime, and compares every output. */
export function compare(
  server: TestServer,
  spec: GraphSpec,
  what: string,
  seed = 1,
  tolerance?: number,
  scale?: number,
) {
  const inputs = Object.fromEntries(spec.inputs.map((v) => [v.name, v.dims as number[]]));
  return compareBytes(server, onnxBytes(spec), inputs, what, { seed, tolerance, scale });
}

/**
 * Converts an ONNX file, runs it in nnserve (inputs given their shapes at execution where
 * the model leaves them unknown, or fixed at conversion with `fixed`) and in onnxruntime
 * on the same seeded inputs, and checks every output's shape and values.
 */
export async function compareBytes(
  server: TestServer,
  bytes: Uint8Array,
  shapes: Record<string, number[]>,
  what: string,
  options: CompareOptions = {},
) {
  const result = await compareWithOnnxRuntime(server.url, bytes, shapes, options);
  for (const o of result.outputs) {
    deepStrictEqual(o.dimensions, o.expectedDimensions, `${what}: ${o.name} shape`);
    assertClose(o.actual, o.expected, `${what}: ${o.name}`, options.tolerance);
  }
  return { conversion: result.conversion, ms: result.nnserveMs };
}

/** The converted model's operation types, in model order. */
export function operationTypes(conversion: OnnxConversion): string[] {
  return conversion.model.operations.map((o) => o.type);
}

/** A one-input, one-output graph. */
export function chain(
  input: (number | string)[],
  output: (number | string)[],
  nodes: NodeSpec[],
  initializers: GraphSpec["initializers"] = [],
  opset = 13,
): GraphSpec {
  const x: ValueSpec = { name: "x", dims: input };
  return { inputs: [x], outputs: [{ name: "y", dims: output }], nodes, initializers, opset };
}

export function weights(name: string, dims: number[], seed: number, scale = 1) {
  return { name, dims, values: seeded(dims, seed, scale) };
}

/** POSTs the graph as an ONNX import and checks the 400 and its message. */
export async function expectImportRefused(server: TestServer, spec: GraphSpec, pattern: RegExp) {
  const response = await fetch(`${server.url}/v1/models`, {
    method: "POST",
    headers: { "content-type": "application/onnx" },
    body: new Uint8Array(onnxBytes(spec)),
  });
  strictEqual(response.status, 400);
  match(JSON.stringify(await response.json()), pattern);
}
