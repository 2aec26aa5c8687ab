/**
 * The HAL 1.3 operations ELU, HARD_SWISH, FILL and RANK end to end: each model is
 * registered, reported supported on cpu-reference, compiled and run through a real server.
 * ELU and HARD_SWISH are also compared with ONNX Runtime's Elu and HardSwish (CPU provider)
 * on the same inputs, within float32 tolerance.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import * as ort from "onnxruntime-node";
import onnxProto from "onnx-proto";
import {
  compileOnReference,
  float32Tensor,
  type JsonOutput,
  type TestServer,
  withTestServer,
} from "./server_fixture.ts";

const { onnx } = onnxProto;

/** Registers the model, checks cpu-reference supports it, compiles and runs it once. */
async function runModel(
  server: TestServer,
  model: unknown,
  inputs: { data: number[]; dimensions?: number[] }[],
): Promise<JsonOutput[]> {
  return (await compileOnReference(server, model))(inputs);
}

/** A one-operation model over operand list `operands`. */
function oneOperation(
  type: string,
  operands: unknown[],
  inputs: number[],
  modelInputs: number[],
) {
  const output = operands.length - 1;
  return {
    operands,
    operations: [{ type, inputs, outputs: [output] }],
    inputIndexes: modelInputs,
    outputIndexes: [output],
  };
}

function float32Scalar(value: number) {
  return {
    type: "FLOAT32",
    dimensions: [],
    scale: 0,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY",
    value: [value],
  };
}

/** Runs a one-node ONNX model (float32 input x, output y of the same shape) in ONNX Runtime. */
async function runOnnx(
  opType: string,
  attribute: { name: string; f: number; type: number } | undefined,
  values: number[],
): Promise<number[]> {
  const valueInfo = (name: string) => ({
    name,
    type: {
      tensorType: {
        elemType: onnx.TensorProto.DataType.FLOAT,
        shape: { dim: [{ dimValue: values.length }] },
      },
    },
  });
  const model = onnx.ModelProto.create({
    irVersion: 7,
    opsetImport: [{ domain: "", version: 14 }],
    graph: {
      name: opType,
      node: [{ opType, input: ["x"], output: ["y"], attribute: attribute ? [attribute] : [] }],
      input: [valueInfo("x")],
      output: [valueInfo("y")],
    },
  });
  const session = await ort.InferenceSession.create(onnx.ModelProto.encode(model).finish());
  try {
    const result = await session.run({
      x: new ort.Tensor("float32", Float32Array.from(values), [values.length]),
    });
    return [...(result.y.data as Float32Array)];
  } finally {
    await session.release();
  }
}

function near(actual: number[], expected: number[], what: string) {
  strictEqual(actual.length, expected.length, what);
  actual.forEach((a, i) => {
    const tolerance = 1e-6 * Math.max(1, Math.abs(expected[i]));
    ok(
      Math.abs(a - expected[i]) <= tolerance,
      `${what} element ${i}: ${a}, expected ${expected[i]}`,
    );
  });
}

const VALUES = [-5, -3, -2.5, -1, -0.5, 0, 0.25, 1, 2.75, 3, 6];

Deno.test("ELU runs on cpu-reference as the formula and ONNX Runtime's Elu say", async () => {
  await withTestServer({}, async (server) => {
    const n = VALUES.length;
    const model = oneOperation(
      "ELU",
      [
        float32Tensor([n], "MODEL_INPUT"),
        float32Scalar(0.75),
        float32Tensor([n], "MODEL_OUTPUT"),
      ],
      [0, 1],
      [0],
    );
    const [output] = await runModel(server, model, [{ data: VALUES }]);
    deepStrictEqual(output.dimensions, [n]);
    near(output.data, VALUES.map((x) => x > 0 ? x : 0.75 * (Math.exp(x) - 1)), "by hand");
    const reference = await runOnnx(
      "Elu",
      { name: "alpha", f: 0.75, type: onnx.AttributeProto.AttributeType.FLOAT },
      VALUES,
    );
    near(output.data, reference, "onnxruntime");
  });
});

Deno.test("HARD_SWISH runs on cpu-reference as the formula and ONNX Runtime's HardSwish say", async () => {
  await withTestServer({}, async (server) => {
    const n = VALUES.length;
    const model = oneOperation(
      "HARD_SWISH",
      [
        float32Tensor([n], "MODEL_INPUT"),
        float32Tensor([n], "MODEL_OUTPUT"),
      ],
      [0],
      [0],
    );
    const [output] = await runModel(server, model, [{ data: VALUES }]);
    near(output.data, VALUES.map((x) => x * Math.min(6, Math.max(0, x + 3)) / 6), "by hand");
    near(output.data, await runOnnx("HardSwish", undefined, VALUES), "onnxruntime");
  });
});

Deno.test("HARD_SWISH runs quant8 on cpu-reference", async () => {
  await withTestServer({}, async (server) => {
    const tensor = (lifetime: string) => ({
      type: "TENSOR_QUANT8_ASYMM",
      dimensions: [4],
      scale: 0.1,
      zeroPoint: 128,
      lifetime,
    });
    const model = oneOperation("HARD_SWISH", [tensor("MODEL_INPUT"), tensor("MODEL_OUTPUT")], [
      0,
    ], [0]);
    const [output] = await runModel(server, model, [{ data: [158, 128, 118, 0] }]);
    // Worked by hand in operations/hard_swish_test.ts: 3 -> 3, 0 -> 0, -1 -> -0.3.
    deepStrictEqual(output.data, [158, 128, 125, 128]);
  });
});

Deno.test("FILL runs with constant dims and with dims known only at execution", async () => {
  await withTestServer({}, async (server) => {
    const dims = (lifetime: string, value?: number[]) => ({
      type: "TENSOR_INT32",
      dimensions: [2],
      scale: 0,
      zeroPoint: 0,
      lifetime,
      ...(value ? { value } : {}),
    });
    const constant = oneOperation(
      "FILL",
      [
        dims("CONSTANT_COPY", [2, 3]),
        float32Scalar(2.5),
        float32Tensor([2, 3], "MODEL_OUTPUT"),
      ],
      [0, 1],
      [],
    );
    const [filled] = await runModel(server, { ...constant, inputIndexes: [] }, []);
    deepStrictEqual(filled, { ...filled, dimensions: [2, 3], data: Array(6).fill(2.5) });
    const dynamic = oneOperation(
      "FILL",
      [
        dims("MODEL_INPUT"),
        {
          type: "INT32",
          dimensions: [],
          scale: 0,
          zeroPoint: 0,
          lifetime: "CONSTANT_COPY",
          value: [-4],
        },
        {
          type: "TENSOR_INT32",
          dimensions: [0, 0],
          scale: 0,
          zeroPoint: 0,
          lifetime: "MODEL_OUTPUT",
        },
      ],
      [0, 1],
      [0],
    );
    const [late] = await runModel(server, dynamic, [{ data: [3, 1] }]);
    deepStrictEqual([late.dimensions, late.data], [[3, 1], [-4, -4, -4]]);
  });
});

Deno.test("RANK runs on cpu-reference and outputs the input's rank", async () => {
  await withTestServer({}, async (server) => {
    const model = oneOperation(
      "RANK",
      [
        float32Tensor([2, 1, 3], "MODEL_INPUT"),
        { type: "INT32", dimensions: [], scale: 0, zeroPoint: 0, lifetime: "MODEL_OUTPUT" },
      ],
      [0],
      [0],
    );
    const [output] = await runModel(server, model, [{ data: [1, 2, 3, 4, 5, 6] }]);
    deepStrictEqual(output.data, [3]);
  });
});
