/**
 * Dynamic quantization (DynamicQuantizeLinear, MatMulInteger, ConvInteger) against
 * onnxruntime-node: the graphs quantize_dynamic emits (x -> DynamicQuantizeLinear ->
 * MatMulInteger/ConvInteger -> Cast -> Mul by the two scales), and the quantization alone.
 * The 8-bit values and zero points must equal onnxruntime's exactly.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { compare, compareBytes, expectImportRefused } from "./onnx/compare.ts";
import {
  type GraphSpec,
  type Initializer,
  INT8,
  type NodeSpec,
  onnx,
  onnxBytes,
  seededIntegers,
  UINT8,
} from "../tools/onnx_graphs.ts";
import { withTestServer } from "./server_fixture.ts";

const INT32 = onnx.TensorProto.DataType.INT32;

/** `name`: one value, or one per index ([n]) when given several. */
function zeroPoint(name: string, values: number[], type: number): Initializer {
  return { name, dims: values.length === 1 ? [] : [values.length], values, dataType: type };
}

/**
 * x -> DynamicQuantizeLinear -> `product` (xq, its zero point and the weights "w" in, "p"
 * out) -> Cast(float) -> times x's scale and the weights' scale -> y.
 */
function dynamicGraph(
  shapes: { x: number[]; y: number[] },
  product: NodeSpec,
  initializers: Initializer[],
  extraOutputs: GraphSpec["outputs"] = [],
): GraphSpec {
  return {
    inputs: [{ name: "x", dims: shapes.x }],
    outputs: [{ name: "y", dims: shapes.y }, ...extraOutputs],
    nodes: [
      { op: "DynamicQuantizeLinear", inputs: ["x"], outputs: ["xq", "x_scale", "x_zero"] },
      product,
      { op: "Cast", inputs: ["p"], outputs: ["pf"], attributes: { to: 1 } },
      { op: "Mul", inputs: ["x_scale", "w_scale"], outputs: ["scale"] },
      { op: "Mul", inputs: ["pf", "scale"], outputs: ["y"] },
    ],
    initializers: [{ name: "w_scale", dims: [], values: [0.0071] }, ...initializers],
    opset: 13,
  };
}

Deno.test("DynamicQuantizeLinear gives onnxruntime's 8-bit values, scale and zero point exactly", async () => {
  const outputs = (dims: number[]) => [
    { name: "xq", dims, type: UINT8 },
    { name: "scale", dims: [1] },
    { name: "zero", dims: [1], type: UINT8 },
  ];
  const graph = (dims: number[], before: NodeSpec[]): GraphSpec => ({
    inputs: [{ name: "x", dims }],
    outputs: outputs(dims),
    nodes: [
      ...before,
      { op: "DynamicQuantizeLinear", inputs: ["x0"], outputs: ["xq", "x_scale", "x_zero"] },
      // NNAPI has no scalar outputs: the scale and zero point leave as [1].
      { op: "Reshape", inputs: ["x_scale", "one"], outputs: ["scale"] },
      { op: "Reshape", inputs: ["x_zero", "one"], outputs: ["zero"] },
    ],
    initializers: [
      { name: "nothing", dims: [], values: [0] },
      { name: "one", dims: [1], values: [1], int64: true },
    ],
    opset: 13,
  });
  await withTestServer({}, async (server) => {
    // Both signs (the zero point inside the range), wide values.
    await compare(
      server,
      graph([2, 3, 17], [{ op: "Identity", inputs: ["x"], outputs: ["x0"] }]),
      "signed",
      3,
      0,
      9,
    );
    // Only positive values: the range starts at 0, the zero point is 0.
    await compare(
      server,
      graph([5, 7], [{ op: "Relu", inputs: ["x"], outputs: ["x0"] }]),
      "non-negative",
      4,
      0,
    );
    // All zeros: scale 1.
    const { conversion } = await compare(
      server,
      graph([4], [{ op: "Mul", inputs: ["x", "nothing"], outputs: ["x0"] }]),
      "zeros",
      5,
      0,
    );
    deepStrictEqual(
      conversion.outputs.map((o) => [o.name, o.elementType, o.operandType]),
      [
        ["xq", "uint8", "TENSOR_QUANT8_ASYMM"],
        ["scale", "float32", "TENSOR_FLOAT32"],
        ["zero", "uint8", "TENSOR_QUANT8_ASYMM"],
      ],
    );
  });
});

Deno.test("MatMulInteger after DynamicQuantizeLinear matches onnxruntime (uint8/int8 weights, zero points per tensor and per column)", async () => {
  await withTestServer({}, async (server) => {
    // One zero point per tensor: one DYNAMIC_QUANTIZE_FULLY_CONNECTED, bit for bit. Per
    // column: float operations on the integers.
    const cases: [string, number[], number, number[], boolean][] = [
      ["uint8 weights, one zero point, rank 2", [3, 8], UINT8, [131], true],
      ["int8 weights, zero point per column, rank 3", [2, 3, 8], INT8, [0, 3, -2, 1, 0, 5], false],
      ["int8 weights, no zero point, rank 3", [2, 4, 8], INT8, [], true],
    ];
    for (const [what, x, type, zeros, fused] of cases) {
      const spec = dynamicGraph(
        { x, y: [...x.slice(0, -1), 6] },
        {
          op: "MatMulInteger",
          inputs: ["xq", "w", "x_zero", ...(zeros.length ? ["w_zero"] : [])],
          outputs: ["p"],
        },
        [
          seededIntegers("w", [8, 6], 7, type),
          ...(zeros.length ? [zeroPoint("w_zero", zeros, type)] : []),
        ],
      );
      const tolerance = fused ? 0 : 1e-5;
      const { conversion } = await compare(server, spec, `MatMulInteger ${what}`, 2, tolerance, 6);
      const types = conversion.model.operations.map((o) => o.type);
      if (fused) {
        deepStrictEqual(
          types.filter((t) => t !== "RESHAPE"),
          ["DYNAMIC_QUANTIZE_FULLY_CONNECTED"],
          what,
        );
      } else {
        ok(types.includes("FULLY_CONNECTED"), what);
        // The quantized input reaches the product centered on its zero point: no x + zp - zp
        // (the two ADDs round the zero point and the values).
        strictEqual(types.filter((t) => t === "ADD").length, 2, `${what}: ${types}`);
      }
    }
    // The 8-bit input read elsewhere too (a graph output): it is computed in full.
    const shared = dynamicGraph(
      { x: [3, 8], y: [3, 6] },
      { op: "MatMulInteger", inputs: ["xq", "w", "x_zero"], outputs: ["p"] },
      [seededIntegers("w", [8, 6], 8, UINT8)],
      [{ name: "xq", dims: [3, 8], type: UINT8 }],
    );
    await compare(server, shared, "MatMulInteger, xq also an output", 3, 1e-5, 4);
    // Rows known only at execution: the range is still taken over the whole tensor.
    const rows = dynamicGraph(
      { x: [3, 8], y: [3, 6] },
      { op: "MatMulInteger", inputs: ["xq", "w", "x_zero"], outputs: ["p"] },
      [seededIntegers("w", [8, 6], 8, UINT8)],
    );
    rows.inputs[0].dims = ["n", 8];
    rows.outputs[0].dims = ["n", 6];
    for (const n of [1, 5]) {
      await compareBytes(server, onnxBytes(rows), { x: [n, 8] }, `MatMulInteger, ${n} rows`, {
        seed: 4,
        tolerance: 1e-5,
        scale: 4,
      });
    }
  });
});

Deno.test("ConvInteger after DynamicQuantizeLinear matches onnxruntime (pads, strides, depthwise, zero points per tensor and per channel)", async () => {
  await withTestServer({}, async (server) => {
    const cases: [
      string,
      number[],
      number[],
      number[],
      number,
      number[],
      NodeSpec["attributes"],
    ][] = [
      ["uint8 weights, pads and strides", [1, 3, 7, 7], [1, 4, 4, 4], [4, 3, 3, 3], UINT8, [
        127,
      ], { pads: [1, 1, 1, 1], strides: [2, 2] }],
      ["int8 weights, one zero point", [1, 3, 6, 6], [1, 4, 6, 6], [4, 3, 3, 3], INT8, [3], {
        pads: [1, 1, 1, 1],
      }],
      ["depthwise", [1, 4, 6, 6], [1, 4, 6, 6], [4, 1, 3, 3], UINT8, [120], {
        group: 4,
        pads: [1, 1, 1, 1],
      }],
    ];
    for (const [what, x, y, w, type, zeros, attributes] of cases) {
      const spec = dynamicGraph(
        { x, y },
        { op: "ConvInteger", inputs: ["xq", "w", "x_zero", "w_zero"], outputs: ["p"], attributes },
        [seededIntegers("w", w, 9, type), zeroPoint("w_zero", zeros, type)],
      );
      await compare(server, spec, `ConvInteger ${what}`, 4, 1e-5, 5);
    }
    // A zero point per output channel, which onnxruntime's ConvInteger refuses: it runs the
    // same weights centered at import instead (int8 values that stay within int8).
    const perChannel = [0, 2, -1, 4];
    const weights = seededIntegers("w", [4, 3, 3, 3], 9, INT8);
    const small = Array.from(weights.values, (v) => Math.round(v / 2));
    const node: NodeSpec = {
      op: "ConvInteger",
      inputs: ["xq", "w", "x_zero", "w_zero"],
      outputs: ["p"],
      attributes: { pads: [1, 1, 1, 1] },
    };
    const shapes = { x: [1, 3, 6, 6], y: [1, 4, 6, 6] };
    const centered = small.map((v, i) => v - perChannel[Math.floor(i / 27)]);
    await compareBytes(
      server,
      onnxBytes(dynamicGraph(shapes, node, [
        { ...weights, values: small },
        zeroPoint("w_zero", perChannel, INT8),
      ])),
      { x: shapes.x },
      "ConvInteger with a zero point per output channel",
      {
        seed: 4,
        tolerance: 1e-5,
        scale: 5,
        oracle: onnxBytes(dynamicGraph(shapes, { ...node, inputs: ["xq", "w", "x_zero"] }, [
          { ...weights, values: centered },
        ])),
      },
    );
  });
});

Deno.test("MatMulInteger and ConvInteger refuse inputs that are not DynamicQuantizeLinear's, naming the node", async () => {
  const refusal = (spec: GraphSpec, pattern: RegExp) =>
    withTestServer({}, (server) => expectImportRefused(server, spec, pattern));
  await refusal(
    {
      inputs: [{ name: "x", dims: [3, 8] }],
      outputs: [{ name: "p", dims: [3, 6], type: INT32 }],
      nodes: [{ op: "MatMulInteger", name: "mm", inputs: ["x", "w"], outputs: ["p"] }],
      initializers: [seededIntegers("w", [8, 6], 7, UINT8)],
      opset: 13,
    },
    /node 'mm' \(MatMulInteger\): MatMulInteger's A \('x'\) is TENSOR_FLOAT32; it must be the 8-bit output of DynamicQuantizeLinear/,
  );
  await refusal(
    {
      inputs: [{ name: "x", dims: [1, 3, 5, 5] }, { name: "wf", dims: [2, 3, 3, 3] }],
      outputs: [{ name: "p", dims: [1, 2, 3, 3], type: INT32 }],
      nodes: [
        { op: "DynamicQuantizeLinear", inputs: ["x"], outputs: ["xq", "xs", "xz"] },
        { op: "DynamicQuantizeLinear", inputs: ["wf"], outputs: ["wq", "ws", "wz"] },
        { op: "ConvInteger", name: "ci", inputs: ["xq", "wq", "xz", "wz"], outputs: ["p"] },
      ],
      opset: 13,
    },
    /node 'ci' \(ConvInteger\): ConvInteger's weights must be a constant/,
  );
});
