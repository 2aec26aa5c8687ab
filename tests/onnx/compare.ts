/**
 * Runs a converted ONNX graph in nnserve (registered, compiled and executed over HTTP) and
 * in onnxruntime-node on the same seeded inputs, and compares every output.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { convertOnnx } from "../../converter/onnx/convert.ts";
import type { TestServer } from "../server_fixture.ts";
import {
  assertClose,
  type GraphSpec,
  type NodeSpec,
  onnxBytes,
  runOrt,
  seeded,
  type ValueSpec,
} from "./graphs.ts";

/** Converts, runs in nnserve and in onnxruntime, and compares every output. */
export function compare(server: TestServer, spec: GraphSpec, what: string, seed = 1) {
  const inputs = Object.fromEntries(spec.inputs.map((v) => [v.name, v.dims as number[]]));
  return compareBytes(server, onnxBytes(spec), inputs, what, { seed });
}

/** How {@link compareBytes} runs a model. */
export interface CompareOptions {
  seed?: number;
  /** Shapes fixed at conversion (see `OnnxConversionOptions.shapes`). */
  shapes?: Record<string, number[]>;
  /** Input values are seeded in [-scale/2, scale/2). */
  scale?: number;
}

/**
 * Converts an ONNX file, runs it in nnserve (inputs given their `dims` at execution where
 * the model leaves them unknown) and in onnxruntime on the same seeded float32 inputs, and
 * compares every output. Returns the conversion and nnserve's execution time.
 */
export async function compareBytes(
  server: TestServer,
  bytes: Uint8Array,
  inputs: Record<string, number[]>,
  what: string,
  options: CompareOptions = {},
) {
  const seed = options.seed ?? 1;
  const conversion = convertOnnx(bytes, { shapes: options.shapes });
  const feeds = Object.fromEntries(
    Object.entries(inputs).map(([name, dims], i) => {
      return [name, { dims, data: seeded(dims, seed + i, options.scale ?? 2) }];
    }),
  );
  const expected = await runOrt(bytes, feeds);
  const registered = await server.request("POST", "/v1/models", conversion.model);
  strictEqual(registered.status, 201, `${what}: ${JSON.stringify(registered.body)}`);
  const compilation = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
  });
  strictEqual(compilation.status, 201, `${what}: ${JSON.stringify(compilation.body)}`);
  const started = performance.now();
  const execution = await server.request(
    "POST",
    `/v1/compilations/${compilation.body.id}/executions`,
    {
      inputs: conversion.inputs.map((info) => ({
        data: Array.from(feeds[info.name].data),
        ...(info.dimensions.includes(0) ? { dimensions: feeds[info.name].dims } : {}),
      })),
    },
  );
  const ms = performance.now() - started;
  strictEqual(execution.status, 200, `${what}: ${JSON.stringify(execution.body)}`);
  const outputs = execution.body.outputs as { dimensions: number[]; data: number[] }[];
  conversion.outputs.forEach((info, i) => {
    deepStrictEqual(outputs[i].dimensions, expected[info.name].dims, `${what}: ${info.name} shape`);
    assertClose(outputs[i].data, expected[info.name].data, `${what}: ${info.name}`);
  });
  return { conversion, ms };
}

/** A one-input, one-output graph. */
export function chain(
  input: number[],
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
