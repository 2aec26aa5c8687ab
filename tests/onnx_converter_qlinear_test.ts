/**
 * QLinearConv and QLinearMatMul against onnxruntime-node (see tests/onnx/compare.ts). The
 * converter takes no 8-bit graph inputs, so each graph quantizes a float input with
 * QuantizeLinear and dequantizes the result with DequantizeLinear: outputs then agree within
 * one step of the output quantization (NNAPI's fixed-point rescaling rounds where
 * onnxruntime's float rescaling may round the other way).
 */
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { convertOnnx } from "../converter/onnx/convert.ts";
import { DriverError } from "../nnapi/errors.ts";
import { compare, expectImportRefused } from "./onnx/compare.ts";
import {
  type GraphSpec,
  type Initializer,
  INT8,
  type NodeSpec,
  onnx,
  onnxBytes,
  seeded,
  seededIntegers,
  UINT8,
} from "../tools/onnx_graphs.ts";
import { type TestServer, withTestServer } from "./server_fixture.ts";

const INT32 = onnx.TensorProto.DataType.INT32;

/** The activations' scale: seeded inputs in [-1, 1) span about 255 steps. */
const X_SCALE = 1 / 127;
const Y_SCALE = 0.04;

/** `<prefix>_scale` and `<prefix>_zero`: scalars, or per-channel [n] when given n values. */
function quantization(
  prefix: string,
  scales: number[],
  zeroPoints: number[],
  type: number,
): Initializer[] {
  const dims = (values: number[]) => values.length === 1 ? [] : [values.length];
  return [
    { name: `${prefix}_scale`, dims: dims(scales), values: scales },
    { name: `${prefix}_zero`, dims: dims(zeroPoints), values: zeroPoints, dataType: type },
  ];
}

/** Activations of one 8-bit type with their zero points. */
interface Activations {
  type: number;
  xZero: number;
  yZero: number;
}
const UNSIGNED: Activations = { type: UINT8, xZero: 128, yZero: 120 };
const SIGNED: Activations = { type: INT8, xZero: -3, yZero: 5 };

/** float x -> QuantizeLinear -> `node` (x's quantized form in, "yq" out) -> DequantizeLinear. */
function quantizedGraph(
  shapes: { x: number[]; y: number[] },
  activations: Activations,
  node: NodeSpec,
  initializers: Initializer[],
): GraphSpec {
  const { type, xZero, yZero } = activations;
  return {
    inputs: [{ name: "x", dims: shapes.x }],
    outputs: [{ name: "y", dims: shapes.y }],
    nodes: [
      { op: "QuantizeLinear", inputs: ["x", "x_scale", "x_zero"], outputs: ["xq"] },
      node,
      { op: "DequantizeLinear", inputs: ["yq", "y_scale", "y_zero"], outputs: ["y"] },
    ],
    initializers: [
      ...quantization("x", [X_SCALE], [xZero], type),
      ...quantization("y", [Y_SCALE], [yZero], type),
      ...initializers,
    ],
  };
}

/** Quantized weights: the tensor "w" with its scales and zero points. */
interface Weights {
  dims: number[];
  type: number;
  scales: number[];
  zeroPoints: number[];
}

interface ConvCase {
  what: string;
  x: number[];
  y: number[];
  activations: Activations;
  weights: Weights;
  bias?: boolean;
  attributes?: NodeSpec["attributes"];
  /** The NNAPI operation and filter operand type expected. */
  operation: string;
  filterType: string;
}

/** Converts, runs and compares a QLinearConv case, and checks the operations it became. */
async function checkConv(server: TestServer, c: ConvCase) {
  const outChannels = c.weights.dims[0];
  const spec = quantizedGraph(
    c,
    c.activations,
    {
      op: "QLinearConv",
      inputs: [
        "xq",
        "x_scale",
        "x_zero",
        "w",
        "w_scale",
        "w_zero",
        "y_scale",
        "y_zero",
        ...(c.bias ? ["b"] : []),
      ],
      outputs: ["yq"],
      attributes: c.attributes,
    },
    [
      seededIntegers("w", c.weights.dims, 7, c.weights.type),
      ...quantization("w", c.weights.scales, c.weights.zeroPoints, c.weights.type),
      ...(c.bias
        ? [{
          name: "b",
          dims: [outChannels],
          values: Array.from(seeded([outChannels], 9), (v) => Math.round(v * 20000)),
          dataType: INT32,
        }]
        : []),
    ],
  );
  const { conversion } = await compare(server, spec, c.what, 1, Y_SCALE * 1.001);
  const { operations, operands } = conversion.model;
  deepStrictEqual(operations.map((o) => o.type), ["QUANTIZE", c.operation, "DEQUANTIZE"], c.what);
  const [input, filter, bias] = operations[1].inputs.map((i) => operands[i]);
  strictEqual(filter.type, c.filterType, `${c.what}: filter type`);
  strictEqual(
    input.type,
    c.activations.type === UINT8 ? "TENSOR_QUANT8_ASYMM" : "TENSOR_QUANT8_ASYMM_SIGNED",
  );
  strictEqual(bias.type, "TENSOR_INT32", `${c.what}: bias type`);
}

Deno.test("QLinearConv onto CONV_2D, DEPTHWISE_CONV_2D and GROUPED_CONV_2D matches within one step", async () => {
  const uint8PerTensor: Weights = {
    dims: [4, 3, 3, 3],
    type: UINT8,
    scales: [0.005],
    zeroPoints: [120],
  };
  await withTestServer({}, async (server) => {
    await checkConv(server, {
      what: "uint8 per tensor, bias, pads and strides",
      x: [1, 3, 7, 7],
      y: [1, 4, 4, 4],
      activations: UNSIGNED,
      weights: uint8PerTensor,
      bias: true,
      attributes: { pads: [1, 1, 1, 1], strides: [2, 2] },
      operation: "CONV_2D",
      filterType: "TENSOR_QUANT8_ASYMM",
    });
    await checkConv(server, {
      what: "int8 activations and weights, auto_pad SAME_UPPER",
      x: [1, 3, 6, 6],
      y: [1, 4, 6, 6],
      activations: SIGNED,
      weights: { dims: [4, 3, 3, 3], type: INT8, scales: [0.006], zeroPoints: [2] },
      bias: true,
      attributes: { auto_pad: "SAME_UPPER" },
      operation: "CONV_2D",
      filterType: "TENSOR_QUANT8_ASYMM_SIGNED",
    });
    await checkConv(server, {
      what: "uint8 activations, int8 weights per output channel, bias, dilations",
      x: [1, 3, 5, 5],
      y: [1, 4, 5, 5],
      activations: UNSIGNED,
      weights: {
        dims: [4, 3, 3, 3],
        type: INT8,
        scales: [0.004, 0.008, 0.002, 0.006],
        zeroPoints: [0, 0, 0, 0],
      },
      bias: true,
      attributes: { pads: [2, 2, 2, 2], dilations: [2, 2] },
      operation: "CONV_2D",
      filterType: "TENSOR_QUANT8_SYMM_PER_CHANNEL",
    });
    await checkConv(server, {
      what: "uint8 activations, int8 weights per tensor (moved to uint8), no bias",
      x: [1, 3, 5, 5],
      y: [1, 4, 3, 3],
      activations: UNSIGNED,
      weights: { dims: [4, 3, 3, 3], type: INT8, scales: [0.005], zeroPoints: [0] },
      operation: "CONV_2D",
      filterType: "TENSOR_QUANT8_ASYMM",
    });
    await checkConv(server, {
      what: "depthwise (multiplier 2), uint8 per tensor, bias",
      x: [1, 3, 6, 6],
      y: [1, 6, 6, 6],
      activations: UNSIGNED,
      weights: { dims: [6, 1, 3, 3], type: UINT8, scales: [0.02], zeroPoints: [128] },
      bias: true,
      attributes: { group: 3, pads: [1, 1, 1, 1] },
      operation: "DEPTHWISE_CONV_2D",
      filterType: "TENSOR_QUANT8_ASYMM",
    });
    await checkConv(server, {
      what: "depthwise, int8 activations, int8 weights per channel, no bias",
      x: [1, 3, 6, 6],
      y: [1, 3, 3, 3],
      activations: SIGNED,
      weights: {
        dims: [3, 1, 3, 3],
        type: INT8,
        scales: [0.02, 0.01, 0.03],
        zeroPoints: [0, 0, 0],
      },
      attributes: { group: 3, pads: [1, 1, 1, 1], strides: [2, 2] },
      operation: "DEPTHWISE_CONV_2D",
      filterType: "TENSOR_QUANT8_SYMM_PER_CHANNEL",
    });
    await checkConv(server, {
      what: "two groups, uint8 per tensor, bias",
      x: [1, 4, 5, 5],
      y: [1, 6, 5, 5],
      activations: UNSIGNED,
      weights: { dims: [6, 2, 3, 3], type: UINT8, scales: [0.008], zeroPoints: [130] },
      bias: true,
      attributes: { group: 2, pads: [1, 1, 1, 1] },
      operation: "GROUPED_CONV_2D",
      filterType: "TENSOR_QUANT8_ASYMM",
    });
  });
});

/** A QLinearMatMul of the quantized input by constant "b". */
function matMulGraph(
  shapes: { x: number[]; y: number[] },
  activations: Activations,
  weights: Weights,
): GraphSpec {
  return quantizedGraph(
    shapes,
    activations,
    {
      op: "QLinearMatMul",
      inputs: ["xq", "x_scale", "x_zero", "b", "b_scale", "b_zero", "y_scale", "y_zero"],
      outputs: ["yq"],
    },
    [
      seededIntegers("b", weights.dims, 11, weights.type),
      ...quantization("b", weights.scales, weights.zeroPoints, weights.type),
    ],
  );
}

Deno.test("QLinearMatMul onto FULLY_CONNECTED (2-D and 3-D input) matches within one step", async () => {
  await withTestServer({}, async (server) => {
    const cases: [string, number[], number[], Activations, Weights][] = [
      ["2-D uint8", [3, 8], [3, 5], UNSIGNED, {
        dims: [8, 5],
        type: UINT8,
        scales: [0.01],
        zeroPoints: [100],
      }],
      ["3-D int8", [2, 3, 8], [2, 3, 5], SIGNED, {
        dims: [8, 5],
        type: INT8,
        scales: [0.012],
        zeroPoints: [3],
      }],
      ["3-D uint8 by int8 weights", [2, 3, 8], [2, 3, 5], UNSIGNED, {
        dims: [8, 5],
        type: INT8,
        scales: [0.01],
        zeroPoints: [0],
      }],
    ];
    for (const [what, x, y, activations, weights] of cases) {
      const { conversion } = await compare(
        server,
        matMulGraph({ x, y }, activations, weights),
        `QLinearMatMul ${what}`,
        1,
        Y_SCALE * 1.001,
      );
      const types = conversion.model.operations.map((o) => o.type);
      deepStrictEqual(
        types,
        x.length === 2
          ? ["QUANTIZE", "FULLY_CONNECTED", "DEQUANTIZE"]
          : ["QUANTIZE", "RESHAPE", "FULLY_CONNECTED", "RESHAPE", "DEQUANTIZE"],
        what,
      );
    }
  });
});

Deno.test("QLinearMatMul and QLinearConv refuse what NNAPI's quantized operations cannot take", async () => {
  // b computed at run time: a 400 naming the node.
  const runtime: GraphSpec = {
    inputs: [{ name: "x", dims: [3, 8] }, { name: "bf", dims: [8, 5] }],
    outputs: [{ name: "y", dims: [3, 5] }],
    nodes: [
      { op: "QuantizeLinear", inputs: ["x", "x_scale", "x_zero"], outputs: ["xq"] },
      { op: "QuantizeLinear", inputs: ["bf", "x_scale", "x_zero"], outputs: ["bq"] },
      {
        op: "QLinearMatMul",
        name: "product",
        inputs: ["xq", "x_scale", "x_zero", "bq", "x_scale", "x_zero", "y_scale", "y_zero"],
        outputs: ["yq"],
      },
      { op: "DequantizeLinear", inputs: ["yq", "y_scale", "y_zero"], outputs: ["y"] },
    ],
    initializers: [
      ...quantization("x", [X_SCALE], [128], UINT8),
      ...quantization("y", [Y_SCALE], [128], UINT8),
    ],
  };
  await withTestServer({}, (server) =>
    expectImportRefused(
      server,
      runtime,
      /node 'product' \(QLinearMatMul\): b \('bq'\) is a runtime tensor; QLinearMatMul is supported with constant b only/,
    ));
  const refused = (spec: GraphSpec, pattern: RegExp) =>
    throws(
      () => convertOnnx(onnxBytes(spec)),
      (error: unknown) =>
        error instanceof DriverError && error.status === "INVALID_ARGUMENT" &&
        pattern.test(error.message),
    );
  refused(
    matMulGraph({ x: [3, 8], y: [3, 5] }, UNSIGNED, {
      dims: [8, 5],
      type: INT8,
      scales: [0.01, 0.02, 0.01, 0.02, 0.01],
      zeroPoints: [0, 0, 0, 0, 0],
    }),
    /\(QLinearMatMul\): b is quantized per column/,
  );
  refused(
    quantizedGraph({ x: [1, 2, 4, 4], y: [1, 2, 2, 2] }, UNSIGNED, {
      op: "QLinearConv",
      inputs: ["xq", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero"],
      outputs: ["yq"],
    }, [
      seededIntegers("w", [2, 2, 3, 3], 3, UINT8),
      ...quantization("w", [0.01, 0.02], [0, 0], UINT8),
    ]),
    /\(QLinearConv\): weights quantized per channel must be symmetric int8/,
  );
  refused(
    quantizedGraph({ x: [1, 2, 4, 4], y: [1, 2, 2, 2] }, UNSIGNED, {
      op: "QLinearConv",
      inputs: ["xq", "x_scale", "x_zero", "w", "w_scale", "w_zero", "y_scale", "y_zero"],
      outputs: ["yq"],
    }, [
      seededIntegers("w", [2, 2, 3, 3], 3, UINT8),
      { name: "w_scale", dims: [], values: [0.01] },
      { name: "w_zero", dims: [], values: [0], dataType: INT8 },
    ]),
    /\(QLinearConv\): the weights are uint8 but their zero point is int8/,
  );
});
