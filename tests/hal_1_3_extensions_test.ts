/**
 * HAL 1.3's additions to older operations, end to end through a real server: each model is
 * registered (its HAL version checked), reported supported on cpu-reference, compiled and
 * run over HTTP. Where ONNX has the same computation, ONNX Runtime (CPU provider) on the same
 * inputs is the oracle: int32 Add/Sub/Mul and floor division (from Mod), Resize in the
 * coordinate modes that equal align_corners / half_pixel_centers, and RNN / LSTM, whose
 * Y_h / Y_c outputs are the final states; other expectations are worked by hand.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import * as ort from "onnxruntime-node";
import { seededFloats } from "../kernels/seeded_random.ts";
import { type GraphSpec, onnx, onnxBytes } from "../tools/onnx_graphs.ts";
import { type TestServer, withTestServer } from "./server_fixture.ts";

const INT32 = onnx.TensorProto.DataType.INT32;

/** One operand of a model in the JSON model format. */
interface OperandJson {
  type: string;
  dimensions: number[];
  scale: number;
  zeroPoint: number;
  lifetime: string;
  value?: number[];
}

function operand(
  type: string,
  dimensions: number[],
  lifetime: string,
  options: { value?: number[]; scale?: number; zeroPoint?: number } = {},
): OperandJson {
  const { value, scale = 0, zeroPoint = 0 } = options;
  return { type, dimensions, scale, zeroPoint, lifetime, ...(value ? { value } : {}) };
}

const scalar = (type: string, value: number) =>
  operand(type, [], "CONSTANT_COPY", { value: [value] });
const omitted = (type: string) => operand(type, [], "NO_VALUE");

/**
 * Builds models operand by operand: model inputs and outputs are listed in the order they
 * are added.
 */
class ModelBuilder {
  operands: OperandJson[] = [];
  operations: { type: string; inputs: number[]; outputs: number[] }[] = [];
  inputIndexes: number[] = [];
  outputIndexes: number[] = [];

  add(o: OperandJson): number {
    this.operands.push(o);
    const index = this.operands.length - 1;
    if (o.lifetime === "MODEL_INPUT") this.inputIndexes.push(index);
    if (o.lifetime === "MODEL_OUTPUT") this.outputIndexes.push(index);
    return index;
  }

  operation(type: string, inputs: OperandJson[], outputs: OperandJson[]): void {
    this.operations.push({
      type,
      inputs: inputs.map((o) => this.add(o)),
      outputs: outputs.map((o) => this.add(o)),
    });
  }

  json() {
    const { operands, operations, inputIndexes, outputIndexes } = this;
    return { operands, operations, inputIndexes, outputIndexes };
  }
}

interface Output {
  dimensions: number[];
  data: number[];
}

/**
 * Registers the model (expecting HAL version `hal`), checks cpu-reference supports every
 * operation, compiles it for cpu-reference and runs it once per input set.
 */
async function runModel(
  server: TestServer,
  model: ModelBuilder,
  options: { hal: string; runs: number[][][] },
): Promise<Output[][]> {
  const registered = await server.request("POST", "/v1/models", model.json());
  strictEqual(registered.status, 201, JSON.stringify(registered.body));
  strictEqual(registered.body.halVersion, options.hal, "the model's HAL version");
  const support = await server.request(
    "POST",
    `/v1/models/${registered.body.id}/supported-operations`,
    {},
  );
  const devices = support.body.devices as { name: string; supported: boolean[] }[];
  deepStrictEqual(
    devices.find((d) => d.name === "cpu-reference")?.supported,
    model.operations.map(() => true),
  );
  const compilation = await server.request("POST", "/v1/compilations", {
    model: registered.body.id,
    devices: ["cpu-reference"],
  });
  strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
  const results: Output[][] = [];
  for (const inputs of options.runs) {
    const execution = await server.request(
      "POST",
      `/v1/compilations/${compilation.body.id}/executions`,
      { inputs: inputs.map((data) => ({ data })) },
    );
    strictEqual(execution.status, 200, JSON.stringify(execution.body));
    results.push(execution.body.outputs as Output[]);
  }
  return results;
}

/** Runs an ONNX graph in ONNX Runtime; returns every output's data by name. */
async function runOnnx(
  spec: GraphSpec,
  feeds: Record<string, ort.Tensor>,
): Promise<Record<string, number[]>> {
  const session = await ort.InferenceSession.create(onnxBytes(spec));
  try {
    const result = await session.run(feeds);
    return Object.fromEntries(
      Object.entries(result).map(([name, t]) => [name, Array.from(t.data as ArrayLike<number>)]),
    );
  } finally {
    await session.release();
  }
}

function near(actual: number[], expected: number[], what: string, tolerance = 1e-5) {
  strictEqual(actual.length, expected.length, `${what}: length`);
  actual.forEach((a, i) =>
    ok(
      Math.abs(a - expected[i]) <= tolerance * Math.max(1, Math.abs(expected[i])),
      `${what} element ${i}: ${a}, expected ${expected[i]}`,
    )
  );
}

const product = (dims: number[]) => dims.reduce((n, d) => n * d, 1);

Deno.test("ADD, SUB, MUL and DIV on TENSOR_INT32 match ONNX Runtime, DIV flooring", async () => {
  await withTestServer({}, async (server) => {
    const model = new ModelBuilder();
    const a = operand("TENSOR_INT32", [2, 3], "MODEL_INPUT");
    const b = operand("TENSOR_INT32", [3], "MODEL_INPUT");
    const [ia, ib] = [model.add(a), model.add(b)];
    for (const type of ["ADD", "SUB", "MUL", "DIV"]) {
      model.operations.push({
        type,
        inputs: [ia, ib, model.add(scalar("INT32", 0))],
        outputs: [model.add(operand("TENSOR_INT32", [2, 3], "MODEL_OUTPUT"))],
      });
    }
    const values = { a: [7, -7, 123456, -9, 0, 5], b: [2, -3, 1000] };
    const edges = { a: [2 ** 31 - 1, 5, -(2 ** 31), 6, -6, 0], b: [1, 0, -1] };
    const [results, edgeResults] = await runModel(server, model, {
      hal: "V1_3",
      runs: [[values.a, values.b], [edges.a, edges.b]],
    });
    // ONNX Div truncates integers; (a - Mod(a, b)) / b, with Python's Mod, is exact floor.
    const int32 = (name: string, dims: number[]) => ({ name, dims, type: INT32 });
    const oracle = await runOnnx({
      inputs: [int32("a", [2, 3]), int32("b", [3])],
      outputs: ["sum", "difference", "product", "quotient"].map((n) => int32(n, [2, 3])),
      nodes: [
        { op: "Add", inputs: ["a", "b"], outputs: ["sum"] },
        { op: "Sub", inputs: ["a", "b"], outputs: ["difference"] },
        { op: "Mul", inputs: ["a", "b"], outputs: ["product"] },
        { op: "Mod", inputs: ["a", "b"], outputs: ["remainder"], attributes: { fmod: 0 } },
        { op: "Sub", inputs: ["a", "remainder"], outputs: ["multiple"] },
        { op: "Div", inputs: ["multiple", "b"], outputs: ["quotient"] },
      ],
    }, {
      a: new ort.Tensor("int32", Int32Array.from(values.a), [2, 3]),
      b: new ort.Tensor("int32", Int32Array.from(values.b), [3]),
    });
    deepStrictEqual(results.map((o) => o.data), [
      oracle.sum,
      oracle.difference,
      oracle.product,
      oracle.quotient,
    ]);
    // By hand: -7 // -3 = 2 and 5 // 1000 = 0 (floor, where truncation agrees), -7 // 2 = -4,
    // 123456 // 1000 = 123, -9 // 2 = -5 (truncation would give -4).
    deepStrictEqual(results[3].data, [3, 2, 123, -5, 0, 0]);
    // Wrapping and the undefined division by zero (0, as Android's reference) by hand.
    deepStrictEqual(edgeResults.map((o) => o.data), [
      [-(2 ** 31), 5, 2 ** 31 - 1, 7, -6, -1],
      [2 ** 31 - 2, 5, -(2 ** 31) + 1, 5, -6, 1],
      [2 ** 31 - 1, 0, -(2 ** 31), 6, 0, 0],
      [2 ** 31 - 1, 0, -(2 ** 31), 6, 0, 0],
    ]);
  });
});

Deno.test("an int32 ADD with a RELU activation is refused at registration, naming the operand", async () => {
  await withTestServer({}, async (server) => {
    const model = new ModelBuilder();
    model.operation("ADD", [
      operand("TENSOR_INT32", [2], "MODEL_INPUT"),
      operand("TENSOR_INT32", [2], "MODEL_INPUT"),
      scalar("INT32", 1),
    ], [operand("TENSOR_INT32", [2], "MODEL_OUTPUT")]);
    const response = await server.request("POST", "/v1/models", model.json());
    strictEqual(response.status, 400);
    ok(
      /operation 0 \(ADD\): input 2 \(operand 2\) is fused activation code 1, but TENSOR_INT32/
        .test(JSON.stringify(response.body)),
      JSON.stringify(response.body),
    );
  });
});

Deno.test("ABS on TENSOR_INT32 runs as V1_3", async () => {
  await withTestServer({}, async (server) => {
    const model = new ModelBuilder();
    model.operation("ABS", [operand("TENSOR_INT32", [5], "MODEL_INPUT")], [
      operand("TENSOR_INT32", [5], "MODEL_OUTPUT"),
    ]);
    const [[output]] = await runModel(server, model, {
      hal: "V1_3",
      runs: [[[-3, 0, 3, 2 ** 31 - 1, -(2 ** 31)]]],
    });
    deepStrictEqual(output.data, [3, 0, 3, 2 ** 31 - 1, -(2 ** 31)]);
  });
});

Deno.test("EMBEDDING_LOOKUP gathers TENSOR_FLOAT16 rows as V1_3", async () => {
  await withTestServer({}, async (server) => {
    const model = new ModelBuilder();
    const rows = [0.5, -1.25, 65504, 0.0999755859375, 3, 2 ** -24];
    model.operation("EMBEDDING_LOOKUP", [
      operand("TENSOR_INT32", [4], "MODEL_INPUT"),
      operand("TENSOR_FLOAT16", [3, 2], "CONSTANT_COPY", { value: rows }),
    ], [operand("TENSOR_FLOAT16", [4, 2], "MODEL_OUTPUT")]);
    const [[output]] = await runModel(server, model, { hal: "V1_3", runs: [[[2, 0, 1, 2]]] });
    deepStrictEqual(output.dimensions, [4, 2]);
    deepStrictEqual(output.data, [3, 2 ** -24, 0.5, -1.25, 65504, 0.0999755859375, 3, 2 ** -24]);
  });
});

Deno.test("L2_NORMALIZATION maps all-zero vectors to zero, float32 and quant8", async () => {
  await withTestServer({}, async (server) => {
    const model = new ModelBuilder();
    // [2, 3] normalized along axis 0: columns (3, 4), (0, 0) and (0, -2).
    model.operation("L2_NORMALIZATION", [
      operand("TENSOR_FLOAT32", [2, 3], "MODEL_INPUT"),
      scalar("INT32", 0),
    ], [operand("TENSOR_FLOAT32", [2, 3], "MODEL_OUTPUT")]);
    const q = { scale: 0.5, zeroPoint: 100 };
    model.operation("L2_NORMALIZATION", [
      operand("TENSOR_QUANT8_ASYMM", [2, 3], "MODEL_INPUT", q),
      scalar("INT32", 0),
    ], [
      operand("TENSOR_QUANT8_ASYMM", [2, 3], "MODEL_OUTPUT", { scale: 1 / 128, zeroPoint: 128 }),
    ]);
    const columns = [3, 0, 0, 4, 0, -2];
    const [[float, quant]] = await runModel(server, model, {
      hal: "V1_2",
      runs: [[columns, columns.map((v) => v + 100)]],
    });
    near(float.data, [0.6, 0, 0, 0.8, 0, -1], "float32");
    // 128 + 128 x: the zero column is exactly the zero point.
    deepStrictEqual([quant.data[1], quant.data[4], quant.data[2], quant.data[5]], [
      128,
      128,
      128,
      0,
    ]);
    ok(Math.abs(quant.data[0] - 204.8) <= 1 && Math.abs(quant.data[3] - 230.4) <= 1);
  });
});

/** NNAPI's (align_corners, half_pixel_centers) and the ONNX Resize attributes computing the same. */
const RESIZE_MODES = [
  {
    name: "legacy",
    flags: [false, false],
    linear: { coordinate_transformation_mode: "asymmetric" },
    nearest: { coordinate_transformation_mode: "asymmetric", nearest_mode: "floor" },
  },
  {
    name: "align_corners",
    flags: [true, false],
    linear: { coordinate_transformation_mode: "align_corners" },
    nearest: { coordinate_transformation_mode: "align_corners", nearest_mode: "round_prefer_ceil" },
  },
  {
    name: "half_pixel_centers",
    flags: [false, true],
    linear: { coordinate_transformation_mode: "half_pixel" },
    nearest: { coordinate_transformation_mode: "tf_half_pixel_for_nn", nearest_mode: "floor" },
  },
  {
    name: "half_pixel_centers (as half_pixel, round_prefer_ceil)",
    flags: [false, true],
    linear: { coordinate_transformation_mode: "half_pixel" },
    nearest: { coordinate_transformation_mode: "half_pixel", nearest_mode: "round_prefer_ceil" },
  },
];

/** An NCHW image [1, 2, 3, 4]: sizes that avoid ties of the floors between the two oracles. */
const IMAGE = [1, 2, 3, 4];
const IMAGE_VALUES = [...seededFloats(product(IMAGE), 7, 20)];

/**
 * ONNX Runtime's Resize of IMAGE_VALUES to [height, width], in opset 11 (where
 * `tf_half_pixel_for_nn` is not yet deprecated).
 */
async function onnxResize(
  size: [number, number],
  attributes: Record<string, string>,
  values = IMAGE_VALUES,
): Promise<number[]> {
  const out = [1, 2, ...size];
  const result = await runOnnx({
    inputs: [{ name: "x", dims: IMAGE }],
    outputs: [{ name: "y", dims: out }],
    nodes: [{ op: "Resize", inputs: ["x", "roi", "scales", "sizes"], outputs: ["y"], attributes }],
    // Opset 11 needs roi and scales, empty.
    initializers: [
      { name: "roi", dims: [0], values: [] },
      { name: "scales", dims: [0], values: [] },
      { name: "sizes", dims: [4], values: out, int64: true },
    ],
    opset: 11,
  }, { x: new ort.Tensor("float32", Float32Array.from(values), IMAGE) });
  return result.y;
}

/** RESIZE_BILINEAR or RESIZE_NEAREST_NEIGHBOR of an NCHW IMAGE to each size, with the flags. */
function resizeModel(
  type: string,
  options: { sizes: [number, number][]; flags: boolean[]; tensor?: string; q?: object },
): ModelBuilder {
  const model = new ModelBuilder();
  const tensor = options.tensor ?? "TENSOR_FLOAT32";
  const image = model.add(operand(tensor, IMAGE, "MODEL_INPUT", options.q));
  for (const [height, width] of options.sizes) {
    model.operations.push({
      type,
      inputs: [
        image,
        model.add(scalar("INT32", width)),
        model.add(scalar("INT32", height)),
        model.add(scalar("BOOL", 1)),
        ...options.flags.map((f) => model.add(scalar("BOOL", +f))),
      ],
      outputs: [model.add(operand(tensor, [1, 2, height, width], "MODEL_OUTPUT", options.q))],
    });
  }
  return model;
}

const SIZES: [number, number][] = [[5, 7], [2, 3]];

Deno.test("RESIZE_BILINEAR with align_corners / half_pixel_centers matches ONNX Runtime's Resize", async () => {
  await withTestServer({}, async (server) => {
    for (const mode of RESIZE_MODES.slice(0, 3)) {
      const model = resizeModel("RESIZE_BILINEAR", { sizes: SIZES, flags: mode.flags });
      const [outputs] = await runModel(server, model, { hal: "V1_3", runs: [[IMAGE_VALUES]] });
      for (const [k, size] of SIZES.entries()) {
        deepStrictEqual(outputs[k].dimensions, [1, 2, ...size]);
        const expected = await onnxResize(size, { mode: "linear", ...mode.linear });
        near(outputs[k].data, expected, `${mode.name} to ${size}`);
      }
    }
  });
});

Deno.test("RESIZE_BILINEAR runs the flags on quant8 (truncating) and float16", async () => {
  await withTestServer({}, async (server) => {
    const bytes = IMAGE_VALUES.map((v) => Math.round(v * 6 + 128));
    const q = { scale: 0.25, zeroPoint: 3 };
    for (const mode of RESIZE_MODES.slice(1, 3)) {
      const expected = await onnxResize([5, 7], { mode: "linear", ...mode.linear }, bytes);
      const quant = resizeModel("RESIZE_BILINEAR", {
        sizes: [[5, 7]],
        flags: mode.flags,
        tensor: "TENSOR_QUANT8_ASYMM",
        q,
      });
      const [[q8]] = await runModel(server, quant, { hal: "V1_3", runs: [[bytes]] });
      // NNAPI truncates toward zero: each value is within one step below the exact one.
      q8.data.forEach((v, i) =>
        ok(v <= expected[i] + 1e-3 && v > expected[i] - 1 - 1e-3, `${mode.name} ${i}: ${v}`)
      );
      const halves = resizeModel("RESIZE_BILINEAR", {
        sizes: [[5, 7]],
        flags: mode.flags,
        tensor: "TENSOR_FLOAT16",
      });
      const f16Image = [...Float16Array.from(IMAGE_VALUES)];
      const [[f16]] = await runModel(server, halves, { hal: "V1_3", runs: [[f16Image]] });
      const exact = await onnxResize([5, 7], { mode: "linear", ...mode.linear }, f16Image);
      near(f16.data, exact, `${mode.name} float16`, 2e-3);
    }
  });
});

Deno.test("RESIZE_NEAREST_NEIGHBOR with align_corners / half_pixel_centers matches ONNX Runtime's Resize", async () => {
  await withTestServer({}, async (server) => {
    for (const mode of RESIZE_MODES) {
      const model = resizeModel("RESIZE_NEAREST_NEIGHBOR", { sizes: SIZES, flags: mode.flags });
      const [outputs] = await runModel(server, model, { hal: "V1_3", runs: [[IMAGE_VALUES]] });
      for (const [k, size] of SIZES.entries()) {
        const expected = await onnxResize(size, { mode: "nearest", ...mode.nearest });
        deepStrictEqual(outputs[k].data, expected, `${mode.name} to ${size}`);
      }
    }
  });
});

Deno.test("RESIZE_NEAREST_NEIGHBOR copies quant8 signed elements with the flags", async () => {
  await withTestServer({}, async (server) => {
    const int8 = IMAGE_VALUES.map((v) => Math.round(v * 6));
    const q = { scale: 0.5, zeroPoint: -3 };
    for (const mode of RESIZE_MODES.slice(1, 3)) {
      const model = resizeModel("RESIZE_NEAREST_NEIGHBOR", {
        sizes: SIZES,
        flags: mode.flags,
        tensor: "TENSOR_QUANT8_ASYMM_SIGNED",
        q,
      });
      const [outputs] = await runModel(server, model, { hal: "V1_3", runs: [[int8]] });
      for (const [k, size] of SIZES.entries()) {
        const expected = await onnxResize(size, { mode: "nearest", ...mode.nearest }, int8);
        deepStrictEqual(outputs[k].data, expected, `${mode.name} to ${size}`);
      }
    }
  });
});

Deno.test("a resize with align_corners and half_pixel_centers both true is refused", async () => {
  await withTestServer({}, async (server) => {
    const model = resizeModel("RESIZE_BILINEAR", { sizes: [[5, 7]], flags: [true, true] });
    const response = await server.request("POST", "/v1/models", model.json());
    strictEqual(response.status, 400);
    ok(
      /align_corners \(input 4, operand 4\) and half_pixel_centers \(input 5, operand 5\) are both true/
        .test(JSON.stringify(response.body)),
      JSON.stringify(response.body),
    );
  });
});

// ---- Recurrent sequences ------------------------------------------------------------------

const MAX_TIME = 3;
const BATCH = 2;
const INPUT_SIZE = 3;
const AUX_SIZE = 2;
const UNITS = 4;

/** Seeded values for a shape, small enough for tanh and sigmoid to stay informative. */
function weights(dims: number[], seed: number): number[] {
  return [...seededFloats(product(dims), seed, 1)];
}

/** [d0, d1, inner] row-major as [d1, d0, inner]. */
function swapFirstTwo(values: number[], [d0, d1, inner]: number[]): number[] {
  const out = new Array<number>(values.length);
  for (let a = 0; a < d0; a++) {
    for (let b = 0; b < d1; b++) {
      for (let i = 0; i < inner; i++) {
        out[(b * d0 + a) * inner + i] = values[(a * d1 + b) * inner + i];
      }
    }
  }
  return out;
}

const f32 = (values: number[], dims: number[]) =>
  new ort.Tensor("float32", Float32Array.from(values), dims);

/** ONNX RNN / LSTM outputs: Y [time, 1 direction, batch, units], Y_h and Y_c [1, batch, units]. */
function onnxOutputs(names: string[]) {
  return names.map((name) => ({
    name,
    dims: name.endsWith("Y") ? [MAX_TIME, 1, BATCH, UNITS] : [1, BATCH, UNITS],
  }));
}

/** One ONNX RNN or LSTM node's inputs as initializers, named with `prefix`. */
function onnxInitializers(prefix: string, tensors: Record<string, [number[], number[]]>) {
  return Object.entries(tensors).map(([name, [dims, values]]) => ({
    name: `${prefix}${name}`,
    dims,
    values,
  }));
}

/** A tanh RNN cell: weights [units, inputSize], recurrent [units, units], bias, state. */
function rnnCell(inputSize: number, seed: number) {
  return {
    weights: weights([UNITS, inputSize], seed),
    recurrent: weights([UNITS, UNITS], seed + 1),
    bias: weights([UNITS], seed + 2),
    state: weights([BATCH, UNITS], seed + 3),
  };
}
type RnnCell = ReturnType<typeof rnnCell>;

/** The ONNX RNN node (Tanh, one direction) of a cell over `x` ([time, batch, size]). */
function onnxRnn(name: string, x: string, cell: RnnCell, inputSize: number, direction: string) {
  return {
    node: {
      op: "RNN",
      inputs: [x, `${name}W`, `${name}R`, `${name}B`, "", `${name}H`],
      outputs: [`${name}Y`, `${name}Yh`],
      attributes: { hidden_size: UNITS, direction },
    },
    initializers: onnxInitializers(name, {
      W: [[1, UNITS, inputSize], cell.weights],
      R: [[1, UNITS, UNITS], cell.recurrent],
      B: [[1, 2 * UNITS], [...cell.bias, ...Array(UNITS).fill(0)]],
      H: [[1, BATCH, UNITS], cell.state],
    }),
  };
}

Deno.test("UNIDIRECTIONAL_SEQUENCE_RNN's final hidden state output matches ONNX RNN's Y_h", async () => {
  await withTestServer({}, async (server) => {
    const cell = rnnCell(INPUT_SIZE, 11);
    const input = weights([BATCH, MAX_TIME, INPUT_SIZE], 10); // batch-major
    const model = new ModelBuilder();
    model.operation("UNIDIRECTIONAL_SEQUENCE_RNN", [
      operand("TENSOR_FLOAT32", [BATCH, MAX_TIME, INPUT_SIZE], "MODEL_INPUT"),
      operand("TENSOR_FLOAT32", [UNITS, INPUT_SIZE], "CONSTANT_COPY", { value: cell.weights }),
      operand("TENSOR_FLOAT32", [UNITS, UNITS], "CONSTANT_COPY", { value: cell.recurrent }),
      operand("TENSOR_FLOAT32", [UNITS], "CONSTANT_COPY", { value: cell.bias }),
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "CONSTANT_COPY", { value: cell.state }),
      scalar("INT32", 4), // tanh
      scalar("INT32", 0), // batch-major
    ], [
      operand("TENSOR_FLOAT32", [BATCH, MAX_TIME, UNITS], "MODEL_OUTPUT"),
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "MODEL_OUTPUT"),
    ]);
    const [[sequence, state]] = await runModel(server, model, { hal: "V1_3", runs: [[input]] });
    deepStrictEqual(state.dimensions, [BATCH, UNITS]);
    const rnn = onnxRnn("fw", "x", cell, INPUT_SIZE, "forward");
    const oracle = await runOnnx({
      inputs: [{ name: "x", dims: [MAX_TIME, BATCH, INPUT_SIZE] }],
      outputs: onnxOutputs(["fwY", "fwYh"]),
      nodes: [rnn.node],
      initializers: rnn.initializers,
    }, {
      x: f32(swapFirstTwo(input, [BATCH, MAX_TIME, INPUT_SIZE]), [MAX_TIME, BATCH, INPUT_SIZE]),
    });
    near(sequence.data, swapFirstTwo(oracle.fwY, [MAX_TIME, BATCH, UNITS]), "output");
    near(state.data, oracle.fwYh, "final hidden state");
  });
});

Deno.test("BIDIRECTIONAL_SEQUENCE_RNN in parallel linking with states matches two ONNX RNNs", async () => {
  await withTestServer({}, async (server) => {
    const fw = rnnCell(INPUT_SIZE, 21);
    const bw = rnnCell(AUX_SIZE, 31); // reads the auxiliary input
    const input = weights([MAX_TIME, BATCH, INPUT_SIZE], 20); // time-major
    const aux = weights([MAX_TIME, BATCH, AUX_SIZE], 30);
    const constant = (dims: number[], value: number[]) =>
      operand("TENSOR_FLOAT32", dims, "CONSTANT_COPY", { value });
    const cellOperands = (cell: RnnCell, inputSize: number) => [
      constant([UNITS, inputSize], cell.weights),
      constant([UNITS, UNITS], cell.recurrent),
      constant([UNITS], cell.bias),
      constant([BATCH, UNITS], cell.state),
    ];
    const model = new ModelBuilder();
    model.operation("BIDIRECTIONAL_SEQUENCE_RNN", [
      operand("TENSOR_FLOAT32", [MAX_TIME, BATCH, INPUT_SIZE], "MODEL_INPUT"),
      ...cellOperands(fw, INPUT_SIZE),
      ...cellOperands(bw, AUX_SIZE),
      operand("TENSOR_FLOAT32", [MAX_TIME, BATCH, AUX_SIZE], "MODEL_INPUT"),
      omitted("TENSOR_FLOAT32"),
      omitted("TENSOR_FLOAT32"),
      scalar("INT32", 4), // tanh
      scalar("BOOL", 1), // time-major
      scalar("BOOL", 1), // merged outputs
    ], [
      operand("TENSOR_FLOAT32", [MAX_TIME, BATCH, 2 * UNITS], "MODEL_OUTPUT"),
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "MODEL_OUTPUT"),
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "MODEL_OUTPUT"),
    ]);
    const [[merged, fwState, bwState]] = await runModel(server, model, {
      hal: "V1_3",
      runs: [[input, aux]],
    });
    const fwRnn = onnxRnn("fw", "x", fw, INPUT_SIZE, "forward");
    const bwRnn = onnxRnn("bw", "aux", bw, AUX_SIZE, "reverse");
    const oracle = await runOnnx({
      inputs: [{ name: "x", dims: [MAX_TIME, BATCH, INPUT_SIZE] }, {
        name: "aux",
        dims: [MAX_TIME, BATCH, AUX_SIZE],
      }],
      outputs: onnxOutputs(["fwY", "fwYh", "bwY", "bwYh"]),
      nodes: [fwRnn.node, bwRnn.node],
      initializers: [...fwRnn.initializers, ...bwRnn.initializers],
    }, {
      x: f32(input, [MAX_TIME, BATCH, INPUT_SIZE]),
      aux: f32(aux, [MAX_TIME, BATCH, AUX_SIZE]),
    });
    // Merged: each step and batch row holds the forward then the backward units.
    const expected: number[] = [];
    for (let row = 0; row < MAX_TIME * BATCH; row++) {
      expected.push(...oracle.fwY.slice(row * UNITS, (row + 1) * UNITS));
      expected.push(...oracle.bwY.slice(row * UNITS, (row + 1) * UNITS));
    }
    near(merged.data, expected, "merged output");
    near(fwState.data, oracle.fwYh, "forward final state");
    near(bwState.data, oracle.bwYh, "backward final state (after step 0)");
  });
});

/** The weights of a plain LSTM cell (no CIFG, peephole, projection or layer norm). */
function lstmCell(inputSize: number, seed: number) {
  const gate = (k: number) => ({
    input: weights([UNITS, inputSize], seed + 4 * k),
    recurrent: weights([UNITS, UNITS], seed + 4 * k + 1),
    bias: weights([UNITS], seed + 4 * k + 2),
  });
  return {
    gates: { input: gate(0), forget: gate(1), cell: gate(2), output: gate(3) },
    outputState: weights([BATCH, UNITS], seed + 20),
    cellState: weights([BATCH, UNITS], seed + 21),
  };
}
type LstmCell = ReturnType<typeof lstmCell>;
const GATES = ["input", "forget", "cell", "output"] as const;

/** NNAPI's 17 cell operands (weights, biases, no peephole or projection) of an LSTM cell. */
function lstmCellOperands(cell: LstmCell, inputSize: number): OperandJson[] {
  const constant = (dims: number[], value: number[]) =>
    operand("TENSOR_FLOAT32", dims, "CONSTANT_COPY", { value });
  return [
    ...GATES.map((g) => constant([UNITS, inputSize], cell.gates[g].input)),
    ...GATES.map((g) => constant([UNITS, UNITS], cell.gates[g].recurrent)),
    omitted("TENSOR_FLOAT32"),
    omitted("TENSOR_FLOAT32"),
    omitted("TENSOR_FLOAT32"),
    ...GATES.map((g) => constant([UNITS], cell.gates[g].bias)),
    omitted("TENSOR_FLOAT32"),
    omitted("TENSOR_FLOAT32"),
  ];
}

/** The ONNX LSTM node (gates in ONNX's i, o, f, c order) of a cell over `x`. */
function onnxLstm(name: string, x: string, cell: LstmCell, inputSize: number, direction: string) {
  const order = ["input", "output", "forget", "cell"] as const;
  return {
    node: {
      op: "LSTM",
      inputs: [x, `${name}W`, `${name}R`, `${name}B`, "", `${name}H`, `${name}C`],
      outputs: [`${name}Y`, `${name}Yh`, `${name}Yc`],
      attributes: { hidden_size: UNITS, direction },
    },
    initializers: onnxInitializers(name, {
      W: [[1, 4 * UNITS, inputSize], order.flatMap((g) => cell.gates[g].input)],
      R: [[1, 4 * UNITS, UNITS], order.flatMap((g) => cell.gates[g].recurrent)],
      B: [[1, 8 * UNITS], [
        ...order.flatMap((g) => cell.gates[g].bias),
        ...Array(4 * UNITS).fill(0),
      ]],
      H: [[1, BATCH, UNITS], cell.outputState],
      C: [[1, BATCH, UNITS], cell.cellState],
    }),
  };
}

Deno.test("UNIDIRECTIONAL_SEQUENCE_LSTM's state outputs match ONNX LSTM's Y_h and Y_c", async () => {
  await withTestServer({}, async (server) => {
    const cell = lstmCell(INPUT_SIZE, 40);
    const input = weights([MAX_TIME, BATCH, INPUT_SIZE], 39);
    const model = new ModelBuilder();
    const state = (value: number[]) =>
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "CONSTANT_COPY", { value });
    model.operation("UNIDIRECTIONAL_SEQUENCE_LSTM", [
      operand("TENSOR_FLOAT32", [MAX_TIME, BATCH, INPUT_SIZE], "MODEL_INPUT"),
      ...lstmCellOperands(cell, INPUT_SIZE),
      state(cell.outputState),
      state(cell.cellState),
      scalar("INT32", 4), // tanh
      scalar("FLOAT32", 0),
      scalar("FLOAT32", 0),
      scalar("BOOL", 1), // time-major
      ...Array.from({ length: 4 }, () => omitted("TENSOR_FLOAT32")),
    ], [
      operand("TENSOR_FLOAT32", [MAX_TIME, BATCH, UNITS], "MODEL_OUTPUT"),
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "MODEL_OUTPUT"),
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "MODEL_OUTPUT"),
    ]);
    const [[sequence, outputState, cellState]] = await runModel(server, model, {
      hal: "V1_3",
      runs: [[input]],
    });
    const lstm = onnxLstm("fw", "x", cell, INPUT_SIZE, "forward");
    const oracle = await runOnnx({
      inputs: [{ name: "x", dims: [MAX_TIME, BATCH, INPUT_SIZE] }],
      outputs: onnxOutputs(["fwY", "fwYh", "fwYc"]),
      nodes: [lstm.node],
      initializers: lstm.initializers,
    }, { x: f32(input, [MAX_TIME, BATCH, INPUT_SIZE]) });
    near(sequence.data, oracle.fwY, "output");
    near(outputState.data, oracle.fwYh, "final output state");
    near(cellState.data, oracle.fwYc, "final cell state");
  });
});

Deno.test("BIDIRECTIONAL_SEQUENCE_LSTM in parallel linking with states matches two ONNX LSTMs", async () => {
  await withTestServer({}, async (server) => {
    const fw = lstmCell(INPUT_SIZE, 60);
    const bw = lstmCell(AUX_SIZE, 90);
    const input = weights([BATCH, MAX_TIME, INPUT_SIZE], 59); // batch-major
    const aux = weights([BATCH, MAX_TIME, AUX_SIZE], 58);
    const state = (value: number[]) =>
      operand("TENSOR_FLOAT32", [BATCH, UNITS], "CONSTANT_COPY", { value });
    const sequence = (units: number) =>
      operand("TENSOR_FLOAT32", [BATCH, MAX_TIME, units], "MODEL_OUTPUT");
    const model = new ModelBuilder();
    model.operation("BIDIRECTIONAL_SEQUENCE_LSTM", [
      operand("TENSOR_FLOAT32", [BATCH, MAX_TIME, INPUT_SIZE], "MODEL_INPUT"),
      ...lstmCellOperands(fw, INPUT_SIZE),
      ...lstmCellOperands(bw, AUX_SIZE),
      state(fw.outputState),
      state(fw.cellState),
      state(bw.outputState),
      state(bw.cellState),
      operand("TENSOR_FLOAT32", [BATCH, MAX_TIME, AUX_SIZE], "MODEL_INPUT"),
      ...Array.from({ length: 8 }, () => omitted("TENSOR_FLOAT32")),
      scalar("INT32", 4), // tanh
      scalar("FLOAT32", 0),
      scalar("FLOAT32", 0),
      scalar("BOOL", 0), // separate outputs
      scalar("BOOL", 0), // batch-major
      ...Array.from({ length: 8 }, () => omitted("TENSOR_FLOAT32")),
    ], [
      sequence(UNITS),
      sequence(UNITS),
      ...Array.from(
        { length: 4 },
        () => operand("TENSOR_FLOAT32", [BATCH, UNITS], "MODEL_OUTPUT"),
      ),
    ]);
    const [outputs] = await runModel(server, model, { hal: "V1_3", runs: [[input, aux]] });
    const fwLstm = onnxLstm("fw", "x", fw, INPUT_SIZE, "forward");
    const bwLstm = onnxLstm("bw", "aux", bw, AUX_SIZE, "reverse");
    const oracle = await runOnnx({
      inputs: [{ name: "x", dims: [MAX_TIME, BATCH, INPUT_SIZE] }, {
        name: "aux",
        dims: [MAX_TIME, BATCH, AUX_SIZE],
      }],
      outputs: onnxOutputs(["fwY", "fwYh", "fwYc", "bwY", "bwYh", "bwYc"]),
      nodes: [fwLstm.node, bwLstm.node],
      initializers: [...fwLstm.initializers, ...bwLstm.initializers],
    }, {
      x: f32(swapFirstTwo(input, [BATCH, MAX_TIME, INPUT_SIZE]), [MAX_TIME, BATCH, INPUT_SIZE]),
      aux: f32(swapFirstTwo(aux, [BATCH, MAX_TIME, AUX_SIZE]), [MAX_TIME, BATCH, AUX_SIZE]),
    });
    const batchMajor = (y: number[]) => swapFirstTwo(y, [MAX_TIME, BATCH, UNITS]);
    near(outputs[0].data, batchMajor(oracle.fwY), "forward output");
    near(outputs[1].data, batchMajor(oracle.bwY), "backward output (from aux_input)");
    near(outputs[2].data, oracle.fwYh, "forward final output state");
    near(outputs[3].data, oracle.fwYc, "forward final cell state");
    near(outputs[4].data, oracle.bwYh, "backward final output state");
    near(outputs[5].data, oracle.bwYc, "backward final cell state");
  });
});
