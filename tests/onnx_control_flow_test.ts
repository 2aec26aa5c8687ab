/**
 * ONNX If and Loop whose conditions are known only at execution, converted onto NNAPI's IF
 * and WHILE with referenced subgraphs, run in nnserve and compared with onnxruntime-node.
 */
import { deepStrictEqual, ok, rejects } from "node:assert/strict";
import { withTestServer } from "./server_fixture.ts";
import { compare } from "./onnx/compare.ts";
import { type GraphSpec, ifNode, type NodeSpec } from "../tools/onnx_graphs.ts";

const BOOL = 9;

/** `cond = ReduceSum(x) <op> 0`, a runtime scalar (or [1, 1] with `keepdims`). */
function sumTest(op: "Greater" | "Less", keepdims = 0): NodeSpec[] {
  return [
    { op: "ReduceSum", inputs: ["x"], outputs: ["sum"], attributes: { keepdims } },
    { op: op, inputs: ["sum", "zero"], outputs: ["cond"] },
  ];
}

/** if (sum(x) <op> 0) y = relu(x) * w else y = sigmoid(x) - x, reading outer values. */
function ifGraph(op: "Greater" | "Less", keepdims = 0): GraphSpec {
  return {
    inputs: [{ name: "x", dims: [2, 3] }],
    outputs: [{ name: "y", dims: [2, 3] }],
    nodes: [
      ...sumTest(op, keepdims),
      { op: "Sigmoid", inputs: ["x"], outputs: ["s"] },
      ifNode("cond", "y", {
        output: { name: "t", dims: [2, 3] },
        nodes: [
          { op: "Relu", inputs: ["x"], outputs: ["r"] },
          { op: "Mul", inputs: ["r", "w"], outputs: ["t"] },
        ],
      }, {
        output: { name: "e", dims: [2, 3] },
        nodes: [{ op: "Sub", inputs: ["s", "x"], outputs: ["e"] }],
      }),
    ],
    initializers: [
      { name: "zero", dims: [], values: [0] },
      { name: "w", dims: [3], values: [0.5, -2, 3] },
    ],
  };
}

/** A Loop over `body` with trip count `m` (int64, "" for none) and condition input `cond`. */
function loopGraph(
  body: GraphSpec["nodes"],
  bodyOutputs: GraphSpec["outputs"],
  options: { m?: number; cond?: boolean; output?: (number | string)[] } = {},
): GraphSpec {
  const condNodes: NodeSpec[] = options.cond ? sumTest("Greater") : [];
  return {
    inputs: [{ name: "x", dims: [2, 3] }],
    outputs: [{ name: "y", dims: options.output ?? [2, 3] }],
    nodes: [
      ...condNodes,
      { op: "Relu", inputs: ["x"], outputs: ["v0"] },
      {
        op: "Loop",
        inputs: [options.m === undefined ? "" : "m", options.cond ? "cond" : "", "v0"],
        outputs: ["y"],
        attributes: {
          body: {
            graph: {
              inputs: [
                { name: "i", dims: [], type: 7 },
                { name: "c", dims: [], type: BOOL },
                { name: "v", dims: [2, 3] },
              ],
              outputs: bodyOutputs,
              nodes: body,
            },
          },
        },
      },
    ],
    initializers: [
      { name: "zero", dims: [], values: [0] },
      { name: "limit", dims: [], values: [40] },
      ...(options.m === undefined
        ? []
        : [{ name: "m", dims: [], values: [options.m], int64: true }]),
    ],
  };
}

/** v = v * 0.5 + x + float(i); cond = sum(v) < 40. */
const HALVE_AND_ADD: NodeSpec[] = [
  { op: "Constant", inputs: [], outputs: ["half"], attributes: { value_float: { float: 0.5 } } },
  { op: "Mul", inputs: ["v", "half"], outputs: ["h"] },
  { op: "Add", inputs: ["h", "x"], outputs: ["hx"] },
  { op: "Cast", inputs: ["i"], outputs: ["fi"], attributes: { to: 1 } },
  { op: "Add", inputs: ["hx", "fi"], outputs: ["v_out"] },
  { op: "ReduceSum", inputs: ["v_out"], outputs: ["total"], attributes: { keepdims: 0 } },
  { op: "Less", inputs: ["total", "limit"], outputs: ["c_out"] },
];
const HALVE_OUTPUTS = [{ name: "c_out", dims: [], type: BOOL }, { name: "v_out", dims: [2, 3] }];

Deno.test("an If whose condition is known only at execution becomes NNAPI's IF", async () => {
  await withTestServer({}, async (server) => {
    const taken = new Set<string>();
    for (const op of ["Greater", "Less"] as const) {
      const { conversion } = await compare(server, ifGraph(op), `If (${op})`);
      const model = conversion.model;
      ok(model.operations.some((o) => o.type === "IF"), "an IF operation");
      deepStrictEqual(model.referenced?.length, 2, "two branches");
      // The outer values each branch reads (x, s) are explicit inputs of both subgraphs.
      deepStrictEqual(model.referenced!.map((g) => g.inputIndexes.length), [2, 2]);
      taken.add(op);
    }
    deepStrictEqual(taken.size, 2);
    // A condition of shape [1, 1] (ONNX takes any single-element tensor) becomes NNAPI's [1].
    await compare(server, ifGraph("Greater", 1), "If on a [1, 1] condition");
  });
});

Deno.test("a Loop onto WHILE: trip count, runtime condition, iteration number, outer reads", async () => {
  await withTestServer({}, async (server) => {
    const cases: [string, { m?: number; cond?: boolean }][] = [
      ["a counted loop (M = 3)", { m: 3 }],
      ["a counted loop whose body condition stops it first", { m: 50 }],
      ["a while loop (M = INT64_MAX, cond)", { m: Number.MAX_SAFE_INTEGER, cond: true }],
      ["a while loop with no M", { cond: true }],
      ["a loop on the body's condition alone (no M, no cond)", {}],
    ];
    for (const [what, options] of cases) {
      const { conversion } = await compare(
        server,
        loopGraph(HALVE_AND_ADD, HALVE_OUTPUTS, options),
        what,
      );
      ok(conversion.model.operations.some((o) => o.type === "WHILE"), `${what}: a WHILE`);
    }
  });
});

Deno.test("a Loop whose carried value grows each iteration, and an If inside a Loop body", async () => {
  await withTestServer({}, async (server) => {
    const grow = loopGraph(
      [
        { op: "Concat", inputs: ["v", "x"], outputs: ["v_out"], attributes: { axis: 0 } },
        { op: "Identity", inputs: ["c"], outputs: ["c_out"] },
      ],
      [{ name: "c_out", dims: [], type: BOOL }, { name: "v_out", dims: ["n", 3] }],
      { m: 3, output: ["n", 3] },
    );
    const { conversion } = await compare(server, grow, "a growing loop-carried value");
    deepStrictEqual(conversion.outputs[0].dimensions, [0, 3], "the extent is known at execution");

    const nested = loopGraph(
      [
        { op: "ReduceSum", inputs: ["v"], outputs: ["total"], attributes: { keepdims: 0 } },
        { op: "Greater", inputs: ["total", "limit"], outputs: ["big"] },
        {
          op: "If",
          inputs: ["big"],
          outputs: ["v_out"],
          attributes: {
            then_branch: {
              graph: {
                inputs: [],
                outputs: [{ name: "shrunk", dims: [2, 3] }],
                nodes: [{ op: "Sub", inputs: ["v", "x"], outputs: ["shrunk"] }],
              },
            },
            else_branch: {
              graph: {
                inputs: [],
                outputs: [{ name: "grown", dims: [2, 3] }],
                nodes: [{ op: "Add", inputs: ["v", "x"], outputs: ["grown"] }, {
                  op: "Add",
                  inputs: ["grown", "x"],
                  outputs: ["unused"],
                }],
              },
            },
          },
        },
        { op: "Identity", inputs: ["c"], outputs: ["c_out"] },
      ],
      [{ name: "c_out", dims: [], type: BOOL }, { name: "v_out", dims: [2, 3] }],
      { m: 12 },
    );
    const nestedRun = await compare(server, nested, "an If inside a Loop body", 3, undefined, 10);
    deepStrictEqual(
      nestedRun.conversion.model.referenced?.length,
      4,
      "body, condition, 2 branches",
    );
  });
});

Deno.test("a Loop's scan outputs, stacked along a new first axis", async () => {
  await withTestServer({}, async (server) => {
    const spec = loopGraph(
      [
        { op: "Add", inputs: ["v", "x"], outputs: ["v_out"] },
        { op: "Identity", inputs: ["c"], outputs: ["c_out"] },
        { op: "Tanh", inputs: ["v_out"], outputs: ["scanned"] },
      ],
      [
        { name: "c_out", dims: [], type: BOOL },
        { name: "v_out", dims: [2, 3] },
        { name: "scanned", dims: [2, 3] },
      ],
      { m: 4 },
    );
    spec.outputs.push({ name: "ys", dims: [4, 2, 3] });
    spec.nodes.at(-1)!.outputs.push("ys");
    const { conversion } = await compare(server, spec, "scan outputs");
    deepStrictEqual(conversion.outputs.map((o) => o.name), ["y", "ys"]);
  });
});

Deno.test("a Loop whose body changes a value's rank is refused naming the node", async () => {
  await withTestServer({}, async (server) => {
    const spec = loopGraph(
      [
        { op: "Unsqueeze", inputs: ["v", "axes"], outputs: ["v_out"] },
        { op: "Identity", inputs: ["c"], outputs: ["c_out"] },
      ],
      [{ name: "c_out", dims: [], type: BOOL }, { name: "v_out", dims: [1, 2, 3] }],
      { m: 2 },
    );
    spec.initializers!.push({ name: "axes", dims: [1], values: [0], int64: true });
    await rejects(
      () => compare(server, spec, "rank change"),
      /node 'Loop_\d+' \(Loop\).*'v' changes rank/,
    );
  });
});
