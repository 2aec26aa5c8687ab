/**
 * A burst computes exactly what the synchronous REST path computes: NNAPI CTS V1_0 cases
 * (conv, depthwise conv, add, softmax, fully connected, pooling, LSTM with its omitted
 * inputs; float32 and quant8; fixed and dynamic output shapes) run through both, one at a
 * time and pipelined, and their outputs are compared byte for byte. Skipped when the
 * vectors are absent.
 */
import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { type ExecutionResult, NnClient } from "../client/mod.ts";
import { compareOutput, type CtsCase, ctsDirectory } from "./cts/vectors.ts";
import { burstGaugesAtZero } from "./burst_fixture.ts";
import { startTestServer } from "./server_fixture.ts";

/** Spec files whose cases (and their dynamic-output-shape twins) are compared. */
const SPECS = [
  "add",
  "add_quant8",
  "conv_float",
  "conv_quant8",
  "conv_float_channels",
  "depthwise_conv2d_float",
  "depthwise_conv2d_quant8",
  "depthwise_conv2d_float_large",
  "fully_connected_quant8",
  "avg_pool_quant8_1",
  "softmax_float_1",
  "softmax_quant8_1",
  "lstm",
  "lstm3",
];

function bytesOf(data: ArrayBufferView | undefined): Uint8Array {
  return data ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(0);
}

function sameOutputs(what: string, rest: ExecutionResult, burst: ExecutionResult): void {
  strictEqual(burst.outputs.length, rest.outputs.length, what);
  deepStrictEqual(burst.outputShapes, rest.outputShapes, what);
  rest.outputs.forEach((output, k) => {
    deepStrictEqual(burst.outputs[k].dimensions, output.dimensions, `${what} output ${k}`);
    strictEqual(burst.outputs[k].data?.constructor, output.data?.constructor, `${what} ${k}`);
    deepStrictEqual(bytesOf(burst.outputs[k].data), bytesOf(output.data), `${what} output ${k}`);
  });
}

Deno.test({
  name: "burst results equal the synchronous path's on NNAPI CTS cases, byte for byte",
  async fn() {
    const directory = ctsDirectory();
    const server = await startTestServer();
    try {
      const client = new NnClient({ baseUrl: server.url });
      let compared = 0;
      for (const spec of SPECS) {
        const cases = JSON.parse(
          await Deno.readTextFile(`${directory}/V1_0/${spec}.json`),
        ) as CtsCase[];
        for (const c of cases) {
          const model = await server.request("POST", "/v1/models", c.model);
          strictEqual(model.status, 201, `${c.name}: register`);
          const compilation = await client.compile(model.body.id as string);
          const burst = await compilation.burst();
          try {
            const frames = c.examples.map((example) =>
              c.model.inputIndexes.map((i): number[] | null => {
                const values = example.inputs[String(i)] ?? [];
                return values.length === 0 ? null : values;
              })
            );
            const synchronous: ExecutionResult[] = [];
            for (const [e, inputs] of frames.entries()) {
              const what = `${c.name} example ${e}`;
              const rest = await compilation.compute(inputs);
              const fast = await burst.compute(inputs, { measureTiming: true });
              sameOutputs(what, rest, fast);
              // And both are right (the CTS check of the REST path).
              c.model.outputIndexes.forEach((operand, k) => {
                if (c.ignoredOutputs.includes(operand)) return;
                const fault = compareOutput(
                  c.model.operands[operand].type,
                  c.examples[e].outputs[String(operand)] ?? [],
                  rest.outputs[k].data ?? [],
                  c.tolerance,
                );
                strictEqual(fault, undefined, `${what} output ${k}`);
              });
              synchronous.push(rest);
              compared++;
            }
            // Pipelined, several frames in flight: the same results, in the same order.
            const repeated = [...frames, ...frames, ...frames];
            await burst.computePipelined(repeated, (result, i) => {
              sameOutputs(`${c.name} pipelined frame ${i}`, synchronous[i % frames.length], result);
            });
          } finally {
            await burst.close();
            await compilation.delete();
          }
        }
      }
      strictEqual(compared, 2 * SPECS.length);
      deepStrictEqual(await burstGaugesAtZero(server.url), { active: 0, slots: 0, inFlight: 0 });
    } finally {
      await server.close();
      await Deno.remove(server.dataDir, { recursive: true });
    }
  },
});
