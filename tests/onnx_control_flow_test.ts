/**
 * ONNX If and Loop whose conditions are known only at execution, converted onto NNAPI's IF
 * and WHILE with referenced subgraphs, run in nnserve and compared with onnxruntime-node.
 */
import { deepStrictEqual, match, ok, rejects, strictEqual } from "node:assert/strict";
import { importOnnx, withTestServer } from "./server_fixture.ts";
import { compare, compareBytes, operationTypes, weights } from "./onnx/compare.ts";
import { type GraphSpec, ifNode, type NodeSpec, onnxBytes } from "../tools/onnx_graphs.ts";
import { seededFloats } from "../kernels/seeded_random.ts";

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

/**
 * `f = (x.shape[2] == 1) ? Squeeze(x, 2) : x`, as torch exports `if x.shape[-1] == 1:
 * x = x.squeeze(-1)` (Silero VAD's decoder): the branches give ranks 2 and 3, so what
 * follows the If is converted once for each, inside each branch.
 */
function squeezeWhenOne(rest: NodeSpec[], output: GraphSpec["outputs"][number]): GraphSpec {
  return {
    inputs: [{ name: "x", dims: ["N", 3, "T"] }],
    outputs: [output],
    nodes: [
      { op: "Shape", inputs: ["x"], outputs: ["s"] },
      { op: "Gather", inputs: ["s", "two"], outputs: ["t"], attributes: { axis: 0 } },
      { op: "Equal", inputs: ["t", "one"], outputs: ["c"] },
      ifNode("c", "f", {
        output: { name: "squeezed", dims: ["N", 3] },
        nodes: [{ op: "Squeeze", inputs: ["x", "axis2"], outputs: ["squeezed"] }],
      }, {
        output: { name: "kept", dims: ["N", 3, "T"] },
        nodes: [{ op: "Identity", inputs: ["x"], outputs: ["kept"] }],
      }, "squeeze_if_one"),
      ...rest,
    ],
    initializers: [
      { name: "two", dims: [], values: [2], int64: true },
      { name: "one", dims: [], values: [1], int64: true },
      { name: "axis2", dims: [1], values: [2], int64: true },
      { name: "axis0", dims: [1], values: [0], int64: true },
    ],
    opset: 13,
  };
}

Deno.test("an If whose branches give different ranks: the rest of the graph continues inside each branch", async () => {
  await withTestServer({}, async (server) => {
    const spec = squeezeWhenOne([
      { op: "Flatten", inputs: ["f"], outputs: ["g"], attributes: { axis: 1 } },
      { op: "Relu", inputs: ["g"], outputs: ["y"] },
    ], { name: "y", dims: ["N", "F"] });
    for (const shape of [[2, 3, 1], [2, 3, 4], [1, 3, 2]]) {
      const { conversion } = await compareBytes(
        server,
        onnxBytes(spec),
        { x: shape },
        `at [${shape}]`,
      );
      // The Relu after the If lives in both branches, not in the main graph.
      const main = operationTypes(conversion);
      ok(main.includes("IF") && !main.includes("RELU"), JSON.stringify(main));
      const branches = conversion.model.referenced!.map((g) => g.operations.map((o) => o.type));
      deepStrictEqual(branches.map((types) => types.includes("RELU")), [true, true]);
    }
  });
});

Deno.test("an If branch that cannot run on the shapes it would get fails only the executions that take it, with the reason", async () => {
  await withTestServer({}, async (server) => {
    // After the squeeze an LSTM takes [1, N, 3]; unsqueezed without it, [1, N, 3, T] is no
    // sequence an LSTM takes: onnxruntime fails such executions, and so does nnserve.
    const spec = squeezeWhenOne([
      { op: "Unsqueeze", inputs: ["f", "axis0"], outputs: ["u"] },
      { op: "LSTM", inputs: ["u", "w", "r"], outputs: ["", "y"], attributes: { hidden_size: 4 } },
    ], { name: "y", dims: [1, "N", 4] });
    spec.initializers!.push(weights("w", [1, 16, 3], 7), weights("r", [1, 16, 4], 8));
    const bytes = onnxBytes(spec);
    for (const n of [1, 3]) await compareBytes(server, bytes, { x: [n, 3, 1] }, `at [${n},3,1]`);
    await rejects(
      () => compareBytes(server, bytes, { x: [1, 3, 2] }, "onnxruntime at T = 2"),
      /X must have 3 dimensions/,
    );

    const model = await importOnnx(server, bytes);
    const note = (model.onnx as { notes: string[] }).notes.find((n) =>
      n.includes("'squeeze_if_one'")
    );
    ok(note?.includes("else_branch") && note.includes("X must have rank 3"), note ?? "no note");
    const compilation = await server.request("POST", "/v1/compilations", { model: model.id });
    strictEqual(compilation.status, 201, JSON.stringify(compilation.body));
    const execute = (t: number) =>
      server.request("POST", `/v1/compilations/${compilation.body.id}/executions`, {
        inputs: [{ dimensions: [1, 3, t], data: Array.from({ length: 3 * t }, (_, i) => i / 7) }],
      });
    const failed = await execute(2);
    strictEqual(failed.status, 400, JSON.stringify(failed.body));
    match(String(failed.body.message), /'squeeze_if_one'.*else_branch.*LSTM's X must have rank 3/);
    // The executor that failed goes on: the next execution takes the branch that runs.
    const ran = await execute(1);
    strictEqual(ran.status, 200, JSON.stringify(ran.body));
    const [y] = ran.body.outputs as { dimensions: number[] }[];
    deepStrictEqual(y.dimensions, [1, 1, 4]);
  });
});

Deno.test("If branches with comparisons, selections and casts, on a condition known only at execution", async () => {
  await withTestServer({}, async (server) => {
    // then: where(x > 0, x, s); else: cast(x < 0) * x + (x == x): every branch compares.
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: ["N", 3] }],
      outputs: [{ name: "y", dims: ["N", 3] }],
      nodes: [
        ...sumTest("Greater"),
        { op: "Sigmoid", inputs: ["x"], outputs: ["s"] },
        ifNode("cond", "y", {
          output: { name: "t", dims: ["N", 3] },
          nodes: [
            { op: "Greater", inputs: ["x", "zero"], outputs: ["positive"] },
            { op: "Where", inputs: ["positive", "x", "s"], outputs: ["t"] },
          ],
        }, {
          output: { name: "e", dims: ["N", 3] },
          nodes: [
            { op: "Less", inputs: ["x", "zero"], outputs: ["negative"] },
            { op: "Cast", inputs: ["negative"], outputs: ["nf"], attributes: { to: 1 } },
            { op: "Equal", inputs: ["x", "x"], outputs: ["same"] },
            { op: "Cast", inputs: ["same"], outputs: ["sf"], attributes: { to: 1 } },
            { op: "Mul", inputs: ["nf", "x"], outputs: ["m"] },
            { op: "Add", inputs: ["m", "sf"], outputs: ["e"] },
          ],
        }),
      ],
      initializers: [{ name: "zero", dims: [], values: [0] }],
      opset: 13,
    };
    const bytes = onnxBytes(spec);
    // Seeds whose sums fall on both sides of 0 take both branches.
    const taken = new Set<boolean>();
    for (const [seed, n] of [[1, 2], [2, 3], [3, 1], [4, 4], [5, 2]]) {
      const { conversion } = await compareBytes(server, bytes, { x: [n, 3] }, `seed ${seed}`, {
        seed,
      });
      ok(operationTypes(conversion).includes("IF"));
      const x = Array.from(seededFloats(n * 3, seed, 2));
      taken.add(x.reduce((a, b) => a + b, 0) > 0);
    }
    deepStrictEqual(taken.size, 2, "both branches taken");
  });
});
