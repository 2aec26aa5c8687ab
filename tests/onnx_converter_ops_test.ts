/**
 * More ONNX operators against onnxruntime-node (see tests/onnx/compare.ts): reductions and
 * arg-max, comparisons and selection, normalizations, Pad and Split, ConvTranspose.
 */
import { deepStrictEqual, rejects } from "node:assert/strict";
import { withTestServer } from "./server_fixture.ts";
import {
  type GraphSpec,
  INT64,
  INT8,
  type NodeSpec,
  onnxBytes,
  UINT8,
} from "../tools/onnx_graphs.ts";
import { chain, compare, compareBytes, weights } from "./onnx/compare.ts";

/** A one-node graph with an int64 output (ArgMax/ArgMin). */
function argChain(input: number[], output: number[], node: NodeSpec): GraphSpec {
  return { ...chain(input, output, [node]), outputs: [{ name: "y", dims: output, type: INT64 }] };
}

Deno.test("reductions, arg-max/min and the variadic Sum/Max/Min/Mean", async () => {
  await withTestServer({}, async (server) => {
    const dims = [2, 3, 4];
    for (const op of ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"]) {
      await compare(
        server,
        chain(
          dims,
          [2, 1, 4],
          [{ op, inputs: ["x"], outputs: ["y"], attributes: { axes: [1] } }],
          [],
          11,
        ),
        `${op} keepdims`,
      );
    }
    await compare(
      server,
      chain(dims, [2], [{
        op: "ReduceSum",
        inputs: ["x", "axes"],
        outputs: ["y"],
        attributes: { keepdims: 0 },
      }], [
        { name: "axes", dims: [2], values: [-1, 1], int64: true },
      ]),
      "ReduceSum opset 13 axes input",
    );
    await compare(
      server,
      argChain(dims, [2, 1, 4], {
        op: "ArgMax",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { axis: 1 },
      }),
      "ArgMax keepdims",
    );
    await compare(
      server,
      argChain(dims, [2, 3], {
        op: "ArgMin",
        inputs: ["x"],
        outputs: ["y"],
        attributes: { axis: -1, keepdims: 0 },
      }),
      "ArgMin",
    );
    const three: GraphSpec["inputs"] = [{ name: "a", dims }, { name: "b", dims }, {
      name: "c",
      dims: [4],
    }];
    for (const op of ["Sum", "Max", "Min", "Mean"]) {
      await compare(
        server,
        {
          inputs: three,
          outputs: [{ name: "y", dims }],
          nodes: [{ op, inputs: ["a", "b", "c"], outputs: ["y"] }],
        },
        op,
      );
    }
  });
});

Deno.test("comparisons, logical operators and Where", async () => {
  await withTestServer({}, async (server) => {
    const dims = [2, 5];
    const pair: GraphSpec["inputs"] = [{ name: "a", dims }, { name: "b", dims }];
    for (const op of ["Greater", "Less", "GreaterOrEqual", "LessOrEqual"]) {
      await compare(
        server,
        {
          inputs: pair,
          outputs: [{ name: "y", dims, type: 9 }],
          nodes: [{ op, inputs: ["a", "b"], outputs: ["y"] }],
        },
        op,
      );
    }
    await compare(
      server,
      {
        inputs: pair,
        outputs: [{ name: "y", dims }],
        nodes: [
          { op: "Greater", inputs: ["a", "b"], outputs: ["g"] },
          { op: "Less", inputs: ["a", "zero"], outputs: ["l"] },
          { op: "Or", inputs: ["g", "l"], outputs: ["c"] },
          { op: "Where", inputs: ["c", "a", "b"], outputs: ["y"] },
        ],
        initializers: [{ name: "zero", dims: [1], values: [0] }],
      },
      "Greater/Less/Or/Where",
    );
  });
});

Deno.test("InstanceNormalization, LayerNormalization, Pad and Split", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([2, 3, 4, 5], [2, 3, 4, 5], [{
        op: "InstanceNormalization",
        inputs: ["x", "s", "b"],
        outputs: ["y"],
        attributes: { epsilon: { float: 1e-4 } },
      }], [weights("s", [3], 20), weights("b", [3], 21)]),
      "InstanceNormalization",
    );
    await compare(
      server,
      chain(
        [2, 3, 8],
        [2, 3, 8],
        [{
          op: "LayerNormalization",
          inputs: ["x", "s", "b"],
          outputs: ["y"],
          attributes: { axis: -1 },
        }],
        [weights("s", [8], 22), weights("b", [8], 23)],
        17,
      ),
      "LayerNormalization",
    );
    await compare(
      server,
      chain([1, 2, 3, 3], [1, 2, 6, 4], [{
        op: "Pad",
        inputs: ["x", "pads", "value"],
        outputs: ["y"],
      }], [
        { name: "pads", dims: [8], values: [0, 0, 1, 0, 0, 0, 2, 1], int64: true },
        { name: "value", dims: [], values: [0.25] },
      ]),
      "Pad constant",
    );
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 6] }],
        outputs: [{ name: "p", dims: [2, 3] }, { name: "q", dims: [2, 3] }],
        nodes: [{ op: "Split", inputs: ["x"], outputs: ["p", "q"], attributes: { axis: 1 } }],
      },
      "Split equal",
    );
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 6] }],
        outputs: [{ name: "p", dims: [2, 1] }, { name: "q", dims: [2, 5] }],
        nodes: [{
          op: "Split",
          inputs: ["x", "sizes"],
          outputs: ["p", "q"],
          attributes: { axis: 1 },
        }],
        initializers: [{ name: "sizes", dims: [2], values: [1, 5], int64: true }],
      },
      "Split unequal",
    );
  });
});

Deno.test("ConvTranspose with strides, padding and output_padding", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([1, 3, 4, 4], [1, 2, 8, 8], [{
        op: "ConvTranspose",
        inputs: ["x", "w", "b"],
        outputs: ["y"],
        attributes: { strides: [2, 2], pads: [1, 1, 1, 1], output_padding: [1, 1] },
      }], [weights("w", [3, 2, 3, 3], 30), weights("b", [2], 31)]),
      "ConvTranspose",
    );
  });
});

Deno.test("Resize and Upsample, nearest and linear, by scales and by sizes", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      chain([1, 2, 3, 4], [1, 2, 6, 8], [{
        op: "Resize",
        inputs: ["x", "", "scales"],
        outputs: ["y"],
        attributes: {
          mode: "nearest",
          coordinate_transformation_mode: "asymmetric",
          nearest_mode: "floor",
        },
      }], [{ name: "scales", dims: [4], values: [1, 1, 2, 2] }]),
      "nearest asymmetric floor by scales",
    );
    await compare(
      server,
      chain([1, 2, 3, 4], [1, 2, 5, 7], [{
        op: "Resize",
        inputs: ["x", "", "", "sizes"],
        outputs: ["y"],
        attributes: { mode: "linear", coordinate_transformation_mode: "asymmetric" },
      }], [{ name: "sizes", dims: [4], values: [1, 2, 5, 7], int64: true }]),
      "linear asymmetric by sizes",
    );
    await compare(
      server,
      chain(
        [1, 2, 3, 4],
        [1, 2, 6, 12],
        [{
          op: "Upsample",
          inputs: ["x", "scales"],
          outputs: ["y"],
          attributes: { mode: "nearest" },
        }],
        [{ name: "scales", dims: [4], values: [1, 1, 2, 3] }],
        9,
      ),
      "Upsample opset 9",
    );
    const modes: [string, string, string?][] = [
      ["linear", "half_pixel"],
      ["linear", "pytorch_half_pixel"],
      ["linear", "align_corners"],
      ["nearest", "half_pixel", "round_prefer_ceil"],
      ["nearest", "align_corners", "round_prefer_ceil"],
      ["nearest", "tf_half_pixel_for_nn", "floor"],
    ];
    for (const [mode, transform, rounding] of modes) {
      await compare(
        server,
        chain([1, 2, 3, 4], [1, 2, 5, 7], [{
          op: "Resize",
          inputs: ["x", "", "", "sizes"],
          outputs: ["y"],
          attributes: {
            mode,
            coordinate_transformation_mode: transform,
            ...(rounding ? { nearest_mode: rounding } : {}),
          },
        }], [{ name: "sizes", dims: [4], values: [1, 2, 5, 7], int64: true }]),
        `${mode} ${transform} ${rounding ?? ""}`,
      );
    }
  });
});

Deno.test("a QDQ graph (uint8 activations, int8 per-channel weights) matches within one quantization step", async () => {
  const step = 0.05;
  await withTestServer({}, async (server) => {
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: [1, 2, 5, 5] }],
      outputs: [{ name: "y", dims: [1, 3, 5, 5] }],
      nodes: [
        { op: "QuantizeLinear", inputs: ["x", "xs", "xz"], outputs: ["xq"] },
        { op: "DequantizeLinear", inputs: ["xq", "xs", "xz"], outputs: ["xf"] },
        { op: "DequantizeLinear", inputs: ["wq", "ws"], outputs: ["wf"], attributes: { axis: 0 } },
        { op: "Conv", inputs: ["xf", "wf"], outputs: ["c"], attributes: { pads: [1, 1, 1, 1] } },
        { op: "QuantizeLinear", inputs: ["c", "ys", "yz"], outputs: ["yq"] },
        { op: "DequantizeLinear", inputs: ["yq", "ys", "yz"], outputs: ["y"] },
      ],
      initializers: [
        { name: "xs", dims: [], values: [0.02] },
        { name: "xz", dims: [], values: [128], dataType: UINT8 },
        {
          name: "wq",
          dims: [3, 2, 3, 3],
          values: Array.from({ length: 54 }, (_, i) => (i * 37) % 255 - 127),
          dataType: INT8,
        },
        { name: "ws", dims: [3], values: [0.01, 0.02, 0.005] },
        { name: "ys", dims: [], values: [step] },
        { name: "yz", dims: [], values: [10], dataType: INT8 },
      ],
    };
    await compare(server, spec, "QDQ conv", 1, step * 1.001);
  });
});

Deno.test("Erf (nnserve's ERF) and Gelu (exact and tanh forms)", async () => {
  await withTestServer({}, async (server) => {
    const dims = [2, 50];
    const { conversion } = await compare(
      server,
      chain(dims, dims, [{ op: "Erf", inputs: ["x"], outputs: ["y"] }]),
      "Erf",
      3,
      undefined,
      8,
    );
    deepStrictEqual(conversion.model.operations.map((o) => o.type), ["ERF"]);
    for (const approximate of ["none", "tanh"]) {
      await compare(
        server,
        chain(
          dims,
          dims,
          [{ op: "Gelu", inputs: ["x"], outputs: ["y"], attributes: { approximate } }],
          [],
          20,
        ),
        `Gelu ${approximate}`,
        4,
        undefined,
        8,
      );
    }
  });
});

Deno.test("an If whose condition folds at conversion becomes its selected branch", async () => {
  await withTestServer({}, async (server) => {
    // if (shape(x)[0] == 1) squeeze the batch axis else keep x; then relu.
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: [1, 3, 4] }],
      outputs: [{ name: "y", dims: [3, 4] }],
      nodes: [
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        { op: "Gather", inputs: ["s", "zero"], outputs: ["n"], attributes: { axis: 0 } },
        { op: "Equal", inputs: ["n", "one"], outputs: ["single"] },
        {
          op: "If",
          inputs: ["single"],
          outputs: ["picked"],
          attributes: {
            then_branch: {
              graph: {
                inputs: [],
                outputs: [{ name: "squeezed", dims: [3, 4] }],
                nodes: [{ op: "Squeeze", inputs: ["x", "axes"], outputs: ["squeezed"] }],
                initializers: [{ name: "axes", dims: [1], values: [0], int64: true }],
              },
            },
            else_branch: {
              graph: {
                inputs: [],
                outputs: [{ name: "same", dims: [1, 3, 4] }],
                nodes: [{ op: "Identity", inputs: ["x"], outputs: ["same"] }],
              },
            },
          },
        },
        { op: "Relu", inputs: ["picked"], outputs: ["y"] },
      ],
      initializers: [
        { name: "zero", dims: [], values: [0], int64: true },
        { name: "one", dims: [], values: [1], int64: true },
      ],
    };
    const { conversion } = await compare(server, spec, "If folded");
    deepStrictEqual(conversion.model.operations.map((o) => o.type), ["SQUEEZE", "RELU"]);
  });
});

Deno.test("MatMul of two runtime tensors, plain, batched (one BATCH_MATMUL) and above rank 4", async () => {
  await withTestServer({}, async (server) => {
    const cases = [
      [[3, 4], [4, 2], [3, 2]],
      [[2, 3, 4], [2, 4, 5], [2, 3, 5]],
      [[1, 2, 3, 4], [1, 2, 4, 5], [1, 2, 3, 5]],
      [[2, 1, 2, 3, 4], [2, 1, 2, 4, 5], [2, 1, 2, 3, 5]],
    ];
    for (const [a, b, y] of cases) {
      const { conversion } = await compare(
        server,
        {
          inputs: [{ name: "a", dims: a }, { name: "b", dims: b }],
          outputs: [{ name: "y", dims: y }],
          nodes: [{ op: "MatMul", inputs: ["a", "b"], outputs: ["y"] }],
        },
        `MatMul [${a}] x [${b}]`,
      );
      const types = conversion.model.operations.map((o) => o.type);
      deepStrictEqual(types.filter((t) => t === "BATCH_MATMUL").length, 1, `${types}`);
    }
  });
});

Deno.test("MatMul of two runtime tensors with extents given at execution (attention over a text line's width)", async () => {
  await withTestServer({}, async (server) => {
    // [a dims, b dims, extents at execution]: any of m, k and n (and leading extents) given
    // at execution, and above rank 4 with one unknown of each input's last two.
    const cases: [(number | string)[], (number | string)[], Record<string, number>][] = [
      [[2, "m", "k"], [2, "k", 4], { m: 3, k: 6 }],
      [[2, 3, "k"], [2, "k", "n"], { k: 5, n: 7 }],
      [[1, 2, "m", 3], [1, 2, 3, "n"], { m: 5, n: 4 }],
      [["m", "k"], ["k", "n"], { m: 2, k: 3, n: 2 }],
      [["h", "m", "k"], ["h", "k", "n"], { h: 3, m: 2, k: 5, n: 4 }],
      [[1, 2, 2, "m", 3], [1, 2, 2, 3, 4], { m: 5 }],
    ];
    for (const [a, b, extents] of cases) {
      const at = (dims: (number | string)[]) =>
        dims.map((d) => typeof d === "number" ? d : extents[d]);
      const y = [...a.slice(0, -1), b[b.length - 1]];
      await compareBytes(
        server,
        onnxBytes({
          inputs: [{ name: "a", dims: a }, { name: "b", dims: b }],
          outputs: [{ name: "y", dims: y }],
          nodes: [{ op: "MatMul", inputs: ["a", "b"], outputs: ["y"] }],
        }),
        { a: at(a), b: at(b) },
        `MatMul [${a}] x [${b}]`,
      );
    }
    await rejects(
      compareBytes(
        server,
        onnxBytes({
          inputs: [{ name: "a", dims: [1, 1, 1, "m", "k"] }, {
            name: "b",
            dims: [1, 1, 1, "k", 2],
          }],
          outputs: [{ name: "y", dims: [1, 1, 1, "m", 2] }],
          nodes: [{ op: "MatMul", inputs: ["a", "b"], outputs: ["y"], name: "rank_5" }],
        }),
        { a: [1, 1, 1, 2, 3], b: [1, 1, 1, 3, 2] },
        "MatMul of rank 5 with m and k unknown",
      ),
      /node 'rank_5' \(MatMul\): .*all but one of each input's last two extents/,
    );
  });
});

Deno.test("reflect and edge Pad, built from slices and concatenations", async () => {
  await withTestServer({}, async (server) => {
    for (const mode of ["reflect", "edge"]) {
      await compare(
        server,
        chain([1, 2, 4, 5], [1, 2, 7, 8], [{
          op: "Pad",
          inputs: ["x", "pads"],
          outputs: ["y"],
          attributes: { mode },
        }], [{ name: "pads", dims: [8], values: [0, 0, 2, 1, 0, 0, 1, 2], int64: true }]),
        `Pad ${mode}`,
      );
    }
  });
});

Deno.test("reflect and edge Pad along extents known only at execution, up to extent - 1", async () => {
  await withTestServer({}, async (server) => {
    for (const mode of ["reflect", "edge"]) {
      const bytes = onnxBytes({
        inputs: [{ name: "x", dims: ["N", 2, "H", "W"] }],
        outputs: [{ name: "y", dims: ["N", 2, "H2", "W2"] }],
        nodes: [{ op: "Pad", inputs: ["x", "pads"], outputs: ["y"], attributes: { mode } }],
        initializers: [{ name: "pads", dims: [8], values: [0, 0, 1, 4, 0, 0, 4, 1], int64: true }],
      });
      for (const shape of [[1, 2, 5, 5], [2, 2, 6, 7]]) {
        await compareBytes(server, bytes, { x: shape }, `Pad ${mode} at [${shape}]`);
      }
    }
  });
});
