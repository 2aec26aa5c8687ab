/**
 * What the compilation cache tests share: a model with weights (so its data cache is not
 * empty), its input, cache tokens, and register / compile / run against a test server.
 */
import { strictEqual } from "node:assert/strict";
import { float32Tensor, int32Scalar, type TestServer } from "./server_fixture.ts";

/** 1x4x4x2 input, 3x3x2->4 convolution (SAME, RELU) with weights: a non-empty data cache. */
export function convModel(scale = 1) {
  const filter = Array.from({ length: 4 * 3 * 3 * 2 }, (_, i) => ((i % 7) - 3) * 0.125 * scale);
  return {
    operands: [
      float32Tensor([1, 4, 4, 2], "MODEL_INPUT"),
      float32Tensor([4, 3, 3, 2], "CONSTANT_REFERENCE", filter),
      float32Tensor([4], "CONSTANT_COPY", [0.5, -0.5, 1, 0]),
      int32Scalar(1),
      int32Scalar(1),
      int32Scalar(1),
      int32Scalar(1),
      float32Tensor([1, 4, 4, 4], "MODEL_OUTPUT"),
    ],
    operations: [{ type: "CONV_2D", inputs: [0, 1, 2, 3, 4, 5, 6], outputs: [7] }],
    inputIndexes: [0],
    outputIndexes: [7],
  };
}

/** The input `run` sends to a {@link convModel} compilation. */
export const CONV_INPUT = Array.from({ length: 32 }, (_, i) => (i % 5) - 2);

/** A cache token (base64 of 32 bytes) made of one byte. */
export const cacheToken = (byte: number) => new Uint8Array(32).fill(byte).toBase64();

/** Registers a model (a {@link convModel} by default); its id. */
export async function register(server: TestServer, model: unknown = convModel()): Promise<string> {
  const r = await server.request("POST", "/v1/models", model);
  strictEqual(r.status, 201, JSON.stringify(r.body));
  return r.body.id as string;
}

/** Compiles a model, with a cache token when given; the compilation's answer. */
export async function compile(server: TestServer, model: string, token?: string) {
  const r = await server.request("POST", "/v1/compilations", {
    model,
    ...(token ? { cache: { token } } : {}),
  });
  strictEqual(r.status, 201, JSON.stringify(r.body));
  return r.body as { id: string; cache: string; cacheRejected?: string };
}

/** Runs a {@link convModel} compilation on {@link CONV_INPUT}; its output values. */
export async function run(server: TestServer, compilation: string): Promise<number[]> {
  const r = await server.request("POST", `/v1/compilations/${compilation}/executions`, {
    inputs: [{ data: CONV_INPUT }],
  });
  strictEqual(r.status, 200, JSON.stringify(r.body));
  return (r.body.outputs as { data: number[] }[])[0].data;
}
