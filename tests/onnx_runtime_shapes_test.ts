/**
 * Shapes computed at execution (#30): where several extents are known only at execution, the
 * converter computes a RESHAPE's target in the model (SHAPE, nnserve's extension operation,
 * then GATHER, MUL and ADD on TENSOR_INT32) and multiplies runtime tensors with leading
 * extents given at execution by BATCH_MATMUL. Each graph is imported as published (symbolic
 * extents), run at two shapes and compared with onnxruntime-node; executors bind each shape
 * (the shapes computed from SHAPE resolve when they do).
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { type GraphSpec, onnxBytes } from "../tools/onnx_graphs.ts";
import { chain, compareBytes, operationTypes, weights } from "./onnx/compare.ts";
import { withTestServer } from "./server_fixture.ts";

Deno.test("Reshape to a target with several extents known only at execution: the target is computed in the model", async () => {
  await withTestServer({}, async (server) => {
    // [N, C, H, W] -> Shape -> [N, C*H, W] (N and W from the input, C*H known): the text
    // recognizer's reshape before its sequence model.
    const graph = chain(["N", 4, 2, "W"], ["N", 8, "W"], [
      { op: "Shape", inputs: ["x"], outputs: ["s"] },
      { op: "Gather", inputs: ["s", "zero"], outputs: ["n"], attributes: { axis: 0 } },
      { op: "Gather", inputs: ["s", "three"], outputs: ["w"], attributes: { axis: 0 } },
      { op: "Unsqueeze", inputs: ["n", "axes"], outputs: ["n1"] },
      { op: "Unsqueeze", inputs: ["w", "axes"], outputs: ["w1"] },
      { op: "Concat", inputs: ["n1", "eight", "w1"], outputs: ["target"], attributes: { axis: 0 } },
      { op: "Reshape", inputs: ["x", "target"], outputs: ["r"] },
      { op: "Relu", inputs: ["r"], outputs: ["y"] },
    ], [
      { name: "zero", dims: [], values: [0], int64: true },
      { name: "three", dims: [], values: [3], int64: true },
      { name: "axes", dims: [1], values: [0], int64: true },
      { name: "eight", dims: [1], values: [8], int64: true },
    ]);
    for (const shape of [[1, 4, 2, 5], [3, 4, 2, 7]]) {
      const { conversion } = await compareBytes(
        server,
        onnxBytes(graph),
        { x: shape },
        `at [${shape}]`,
      );
      ok(operationTypes(conversion).includes("SHAPE"), JSON.stringify(operationTypes(conversion)));
    }
  });
});

Deno.test("Flatten of leading extents known only at execution, and MatMul by constant weights of an input with several", async () => {
  await withTestServer({}, async (server) => {
    const flatten = chain(["N", "T", 3, 4], ["NT", 12], [
      { op: "Flatten", inputs: ["x"], outputs: ["f"], attributes: { axis: 2 } },
      { op: "Relu", inputs: ["f"], outputs: ["y"] },
    ]);
    for (const shape of [[2, 3, 3, 4], [1, 5, 3, 4]]) {
      await compareBytes(server, onnxBytes(flatten), { x: shape }, `Flatten at [${shape}]`);
    }
    // [N, T, 6] x [6, 5]: rows, FULLY_CONNECTED, and back to [N, T, 5] computed at execution.
    const matmul = chain(["N", "T", 6], ["N", "T", 5], [
      { op: "MatMul", inputs: ["x", "w"], outputs: ["y"] },
    ], [weights("w", [6, 5], 3)]);
    for (const shape of [[2, 3, 6], [4, 1, 6]]) {
      await compareBytes(server, onnxBytes(matmul), { x: shape }, `MatMul at [${shape}]`);
    }
  });
});

Deno.test("MatMul of two runtime tensors whose leading extents are known only at execution runs as BATCH_MATMUL", async () => {
  await withTestServer({}, async (server) => {
    // Attention's Q.K^T and P.V with the batch and the sequence length given at execution.
    const graph: GraphSpec = {
      inputs: [{ name: "q", dims: ["B", 2, "T", 4] }, { name: "k", dims: ["B", 2, "T", 4] }],
      outputs: [{ name: "y", dims: ["B", 2, "T", 4] }],
      nodes: [
        { op: "Transpose", inputs: ["k"], outputs: ["kt"], attributes: { perm: [0, 1, 3, 2] } },
        { op: "MatMul", inputs: ["q", "kt"], outputs: ["scores"] },
        { op: "Softmax", inputs: ["scores"], outputs: ["p"], attributes: { axis: -1 } },
        { op: "MatMul", inputs: ["p", "k"], outputs: ["y"] },
      ],
      opset: 13,
    };
    for (const [b, t] of [[1, 3], [2, 5]]) {
      const { conversion } = await compareBytes(
        server,
        onnxBytes(graph),
        { q: [b, 2, t, 4], k: [b, 2, t, 4] },
        `attention at B=${b}, T=${t}`,
      );
      deepStrictEqual(operationTypes(conversion).filter((t) => t === "BATCH_MATMUL").length, 2);
    }
  });
});

Deno.test("a rotary position table over a sequence given at execution: Range to Shape(x)[1], Cos and Sin", async () => {
  await withTestServer({}, async (server) => {
    // positions [T] -> [T, 1] x inverse frequencies [1, 4] -> cos and sin, added to x [N, T, 4].
    const graph = chain(["N", "T", 4], ["N", "T", 4], [
      { op: "Shape", inputs: ["x"], outputs: ["s"] },
      { op: "Gather", inputs: ["s", "one"], outputs: ["t"], attributes: { axis: 0 } },
      { op: "Range", inputs: ["zero", "t", "step"], outputs: ["positions"] },
      { op: "Cast", inputs: ["positions"], outputs: ["p"], attributes: { to: 1 } },
      { op: "Unsqueeze", inputs: ["p", "last"], outputs: ["column"] },
      { op: "Mul", inputs: ["column", "frequencies"], outputs: ["angles"] },
      { op: "Cos", inputs: ["angles"], outputs: ["c"] },
      { op: "Sin", inputs: ["angles"], outputs: ["si"] },
      { op: "Mul", inputs: ["x", "c"], outputs: ["xc"] },
      { op: "Add", inputs: ["xc", "si"], outputs: ["y"] },
    ], [
      { name: "zero", dims: [], values: [0], int64: true },
      { name: "one", dims: [], values: [1], int64: true },
      { name: "step", dims: [], values: [1], int64: true },
      { name: "last", dims: [1], values: [1], int64: true },
      { name: "frequencies", dims: [1, 4], values: [1, 0.1, 0.01, 0.001] },
    ]);
    for (const shape of [[1, 7, 4], [2, 40, 4]]) {
      const { conversion } = await compareBytes(
        server,
        onnxBytes(graph),
        { x: shape },
        `at [${shape}]`,
      );
      ok(operationTypes(conversion).includes("RANGE"), JSON.stringify(operationTypes(conversion)));
    }
  });
});

Deno.test("a model output that is its input, with several extents known only at execution, is copied (MUL by 1)", async () => {
  await withTestServer({}, async (server) => {
    const identity = chain(["N", "T"], ["N", "T"], [{
      op: "Identity",
      inputs: ["x"],
      outputs: ["y"],
    }]);
    for (const shape of [[1, 5], [3, 2]]) {
      const { conversion } = await compareBytes(
        server,
        onnxBytes(identity),
        { x: shape },
        `at [${shape}]`,
      );
      deepStrictEqual(operationTypes(conversion), ["MUL"]);
    }
  });
});

Deno.test("Expand, Tile and CastLike with shapes known only at execution", async () => {
  await withTestServer({}, async (server) => {
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: ["N", 1, 3] }, { name: "v", dims: [1, 3] }],
      outputs: [
        { name: "wide", dims: ["N", 2, 3] },
        { name: "rows", dims: [4, 3] },
        { name: "tiled", dims: ["M", 2, 3] },
        { name: "extents", dims: [3] },
      ],
      nodes: [
        // [N, 2, 3] from Shape(x)[0] at execution.
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        { op: "Slice", inputs: ["s", "zero", "one"], outputs: ["n"] },
        { op: "Concat", inputs: ["n", "two_three"], outputs: ["target"], attributes: { axis: 0 } },
        { op: "Expand", inputs: ["x", "target"], outputs: ["wide"] },
        { op: "Expand", inputs: ["v", "four_one"], outputs: ["rows"] },
        { op: "Tile", inputs: ["x", "repeats"], outputs: ["tiled"] },
        { op: "CastLike", inputs: ["s", "v"], outputs: ["extents"] },
      ],
      initializers: [
        { name: "zero", dims: [1], values: [0], int64: true },
        { name: "one", dims: [1], values: [1], int64: true },
        { name: "two_three", dims: [2], values: [2, 3], int64: true },
        { name: "four_one", dims: [2], values: [4, 1], int64: true },
        { name: "repeats", dims: [3], values: [2, 2, 1], int64: true },
      ],
      opset: 15,
    };
    for (const n of [1, 3]) {
      await compareBytes(server, onnxBytes(spec), { x: [n, 1, 3], v: [1, 3] }, `N = ${n}`);
    }
  });
});

Deno.test("Trilu, ConstantOfShape and Slice with bounds known only at execution (a decoder's causal mask over its cache)", async () => {
  await withTestServer({}, async (server) => {
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: ["B", "L", "L"] }, { name: "cache", dims: ["B", "P", 4] }],
      outputs: [
        { name: "upper", dims: ["B", "L", "L"] },
        { name: "strict", dims: ["B", "L", "L"] },
        { name: "lower", dims: ["B", "L", "L"] },
        { name: "mask", dims: ["L", "L"] },
        { name: "cut", dims: ["B", "L", "P"] },
      ],
      nodes: [
        { op: "Trilu", inputs: ["x"], outputs: ["upper"] },
        { op: "Trilu", inputs: ["x", "one"], outputs: ["strict"] },
        { op: "Trilu", inputs: ["x", "minus_one"], outputs: ["lower"], attributes: { upper: 0 } },
        // A [L, L] mask of -1e9 above the diagonal, from Shape(x) at execution.
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        { op: "Slice", inputs: ["s", "one_v", "three_v"], outputs: ["ll"] },
        {
          op: "ConstantOfShape",
          inputs: ["ll"],
          outputs: ["full"],
          attributes: { value: { tensor: { dims: [1], values: [-1e9] } } },
        },
        { op: "Trilu", inputs: ["full", "one"], outputs: ["mask"] },
        // x cut to the cache's length P along its last axis (P <= L here).
        { op: "Shape", inputs: ["cache"], outputs: ["cs"] },
        { op: "Slice", inputs: ["cs", "one_v", "two_v"], outputs: ["p"] },
        { op: "Slice", inputs: ["x", "zero_v", "p", "two_v"], outputs: ["cut"] },
      ],
      initializers: [
        { name: "one", dims: [], values: [1], int64: true },
        { name: "minus_one", dims: [], values: [-1], int64: true },
        { name: "zero_v", dims: [1], values: [0], int64: true },
        { name: "one_v", dims: [1], values: [1], int64: true },
        { name: "two_v", dims: [1], values: [2], int64: true },
        { name: "three_v", dims: [1], values: [3], int64: true },
      ],
      opset: 14,
    };
    for (const [b, l, p] of [[1, 3, 2], [2, 5, 5]]) {
      await compareBytes(
        server,
        onnxBytes(spec),
        { x: [b, l, l], cache: [b, p, 4] },
        `B = ${b}, L = ${l}, P = ${p}`,
      );
    }
  });
});

Deno.test("symbolic extents keep their names: a Where of values of one symbol selects as it is; of different symbols it broadcasts at execution", async () => {
  await withTestServer({}, async (server) => {
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: ["N", 3] }, { name: "v", dims: ["M", 3] }],
      outputs: [{ name: "same", dims: ["N", 3] }, { name: "mixed", dims: ["N", 3] }],
      nodes: [
        // x, x > 0 and sigmoid(x) + x are all [N, 3]: the names say so.
        { op: "Greater", inputs: ["x", "zero"], outputs: ["positive"] },
        { op: "Sigmoid", inputs: ["x"], outputs: ["s"] },
        { op: "Add", inputs: ["s", "x"], outputs: ["t"] },
        { op: "Where", inputs: ["positive", "x", "t"], outputs: ["same"] },
        // v is [M, 3]: M may be 1 (broadcast) or N, known only at execution.
        { op: "Where", inputs: ["positive", "x", "v"], outputs: ["mixed"] },
      ],
      initializers: [{ name: "zero", dims: [1], values: [0] }],
      opset: 13,
    };
    for (const [n, m] of [[2, 2], [4, 1]]) {
      const { conversion } = await compareBytes(
        server,
        onnxBytes(spec),
        { x: [n, 3], v: [m, 3] },
        `N = ${n}, M = ${m}`,
      );
      // One SELECT as it is, one after FILLed zeros broadcast its inputs.
      const types = operationTypes(conversion);
      deepStrictEqual(types.filter((t) => t === "SELECT").length, 2, types.join());
      const fills = conversion.model.operations.filter((o) => o.type === "FILL").length;
      ok(fills >= 1 && fills <= 3, `${fills} FILLs: ${types.join()}`);
      const same = conversion.model.operations.find((o) =>
        o.type === "SELECT" && o.outputs[0] === conversion.model.outputIndexes[0]
      );
      ok(same, "the first output is a SELECT of the inputs as they are");
    }
  });
});

Deno.test("opset-11 Softmax over several axes, some known only at execution: rows computed there", async () => {
  await withTestServer({}, async (server) => {
    const graph = chain(
      ["N", 3, "W"],
      ["N", 3, "W"],
      [
        { op: "Softmax", inputs: ["x"], outputs: ["y"], attributes: { axis: 1 } },
      ],
      [],
      11,
    );
    for (const shape of [[1, 3, 2], [2, 3, 5]]) {
      await compareBytes(server, onnxBytes(graph), { x: shape }, `at [${shape}]`);
    }
  });
});
