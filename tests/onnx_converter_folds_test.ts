/**
 * Converter gaps published models stopped on, against onnxruntime-node (tests/onnx/compare.ts):
 * Size, folds of Split, reductions, comparisons and Cast on constants, Cast to and from bool,
 * Where with broadcasting, Clip with runtime bounds, rank-5 Transpose/Slice/Squeeze, and
 * reshapes and graph outputs of int32 and bool tensors (which NNAPI's RESHAPE does not take).
 * Each refusal is an INVALID_ARGUMENT naming the node and its cause.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { convertOnnx } from "../converter/onnx/convert.ts";
import { DriverError } from "../nnapi/errors.ts";
import { type TestServer, withTestServer } from "./server_fixture.ts";
import {
  FLOAT,
  type GraphSpec,
  INT64,
  type NodeSpec,
  onnx,
  onnxBytes,
} from "../tools/onnx_graphs.ts";
import { chain, compare, compareBytes, operationTypes } from "./onnx/compare.ts";

const BOOL = onnx.TensorProto.DataType.BOOL;
const INT32 = onnx.TensorProto.DataType.INT32;

/** The NNAPI operation types of a conversion, in order. */
/** The message of the refusal converting `spec` ends in (a DriverError, INVALID_ARGUMENT). */
function refusal(spec: GraphSpec): string {
  try {
    convertOnnx(onnxBytes(spec));
  } catch (error) {
    ok(error instanceof DriverError, String(error));
    strictEqual(error.status, "INVALID_ARGUMENT");
    return error.message;
  }
  throw new Error("the conversion was not refused");
}

/** Compares a graph whose integer or boolean inputs take `values`. */
function compareWithValues(
  server: TestServer,
  spec: GraphSpec,
  what: string,
  values: Record<string, number[]>,
) {
  const shapes = Object.fromEntries(spec.inputs.map((v) => [v.name, v.dims as number[]]));
  return compareBytes(server, onnxBytes(spec), shapes, what, { values });
}

/** `y = Relu(x)` beside other outputs, so a graph of constants still reads its input. */
const relu = { op: "Relu", inputs: ["x"], outputs: ["y"] };

/**
 * Reshape(x, [batch, -1]) of x [N, 3, 4] with N known only at execution, `batch` taken from
 * `s = Shape(x)` by `nodes`: it must fold to a single RESHAPE and match onnxruntime.
 */
async function reshapeToBatchRows(
  server: TestServer,
  what: string,
  nodes: NodeSpec[],
  initializers: NonNullable<GraphSpec["initializers"]>,
  opset?: number,
) {
  const { conversion } = await compareBytes(
    server,
    onnxBytes({
      inputs: [{ name: "x", dims: ["N", 3, 4] }],
      outputs: [{ name: "y", dims: ["N", 12] }],
      nodes: [
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        ...nodes,
        { op: "Concat", inputs: ["batch", "minus"], outputs: ["target"], attributes: { axis: 0 } },
        { op: "Reshape", inputs: ["x", "target"], outputs: ["y"] },
      ],
      initializers: [...initializers, { name: "minus", dims: [1], values: [-1], int64: true }],
      ...(opset ? { opset } : {}),
    }),
    { x: [5, 3, 4] },
    what,
  );
  deepStrictEqual(operationTypes(conversion), ["RESHAPE"]);
}

Deno.test("extents known only at execution pass through integer Casts (Paddle2ONNX's Shape -> Cast(int32) -> Slice -> Cast(int64))", async () => {
  await withTestServer({}, async (server) => {
    const INT32 = 6;
    await reshapeToBatchRows(
      server,
      "Reshape(x, [Cast(Cast(Shape(x), int32)[0:1], int64), -1])",
      [
        { op: "Cast", inputs: ["s"], outputs: ["s32"], attributes: { to: INT32 } },
        {
          op: "Slice",
          inputs: ["s32"],
          outputs: ["batch32"],
          attributes: { axes: [0], starts: [0], ends: [1] },
        },
        { op: "Cast", inputs: ["batch32"], outputs: ["batch"], attributes: { to: INT64 } },
      ],
      [],
      9,
    );
    // To float, the extents are computed at execution (SHAPE, then CAST).
    const bytes = onnxBytes({
      inputs: [{ name: "x", dims: ["N", 4] }],
      outputs: [{ name: "y", dims: [2] }],
      nodes: [
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        { op: "Cast", inputs: ["s"], outputs: ["y"], attributes: { to: 1 } },
      ],
    });
    for (const n of [2, 5]) await compareBytes(server, bytes, { x: [n, 4] }, `Cast at N=${n}`);
  });
});

Deno.test("Size folds to an int64 scalar when every extent is known, and is computed at execution otherwise", async () => {
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(
      server,
      chain([2, 3, 4], [24], [
        { op: "Size", inputs: ["x"], outputs: ["n"] },
        { op: "Unsqueeze", inputs: ["n", "zero"], outputs: ["target"] },
        { op: "Reshape", inputs: ["x", "target"], outputs: ["y"] },
      ], [{ name: "zero", dims: [1], values: [0], int64: true }]),
      "Reshape(x, [Size(x)])",
    );
    deepStrictEqual(operationTypes(conversion), ["RESHAPE"]);
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 3] }],
        outputs: [{ name: "y", dims: [2, 3] }, { name: "n", dims: [], type: INT64 }],
        nodes: [relu, { op: "Size", inputs: ["w"], outputs: ["n"] }],
        initializers: [{ name: "w", dims: [5, 7], values: new Array(35).fill(1) }],
      },
      "Size of a constant as a graph output",
    );
    // Extents known only at execution: their product computed there.
    const bytes = onnxBytes({
      inputs: [{ name: "x", dims: ["N", 4] }],
      outputs: [{ name: "n", dims: [], type: INT64 }],
      nodes: [{ op: "Size", inputs: ["x"], outputs: ["n"] }],
    });
    for (const n of [2, 3]) await compareBytes(server, bytes, { x: [n, 4] }, `Size at N=${n}`);
  });
});

Deno.test("Split of a constant folds: split attribute, split input, num_outputs, equal parts", async () => {
  const w = { name: "w", dims: [6, 3], values: Array.from({ length: 18 }, (_, i) => i - 7) };
  const parts = (sizes: number[]) => sizes.map((n, i) => ({ name: `p${i}`, dims: [n, 3] }));
  /** Each part of w plus x (broadcast), so every part reaches an output. */
  const graph = (sizes: number[], split: GraphSpec["nodes"][number], opset: number) => ({
    inputs: [{ name: "x", dims: [1, 3] }],
    outputs: parts(sizes).map((p, i) => ({ name: `y${i}`, dims: p.dims })),
    nodes: [
      split,
      ...sizes.map((_, i) => ({ op: "Add", inputs: ["x", `p${i}`], outputs: [`y${i}`] })),
    ],
    initializers: [w, { name: "sizes", dims: [sizes.length], values: sizes, int64: true }],
    opset,
  });
  const outputs = (n: number) => Array.from({ length: n }, (_, i) => `p${i}`);
  await withTestServer({}, async (server) => {
    const cases: [string, GraphSpec][] = [
      [
        "split attribute (opset 11)",
        graph(
          [1, 5],
          { op: "Split", inputs: ["w"], outputs: outputs(2), attributes: { split: [1, 5] } },
          11,
        ),
      ],
      [
        "split input (opset 13)",
        graph([4, 2], { op: "Split", inputs: ["w", "sizes"], outputs: outputs(2) }, 13),
      ],
      ["equal parts", graph([2, 2, 2], { op: "Split", inputs: ["w"], outputs: outputs(3) }, 13)],
      [
        "num_outputs (opset 18)",
        graph(
          [3, 3],
          { op: "Split", inputs: ["w"], outputs: outputs(2), attributes: { num_outputs: 2 } },
          18,
        ),
      ],
      [
        "num_outputs of an extent it does not divide: the last part smaller",
        {
          ...graph([2, 2, 2], {
            op: "Split",
            inputs: ["w"],
            outputs: outputs(3),
            attributes: { num_outputs: 3, axis: 0 },
          }, 18),
          initializers: [{ ...w, dims: [5, 3], values: w.values.slice(0, 15) }],
          outputs: [[2, 3], [2, 3], [1, 3]].map((dims, i) => ({ name: `y${i}`, dims })),
        },
      ],
    ];
    for (const [what, spec] of cases) {
      const { conversion } = await compare(server, spec, what);
      ok(operationTypes(conversion).every((t) => t === "ADD"), operationTypes(conversion).join());
    }
    // Split of a Shape (extents known only at execution) moves its symbols.
    await reshapeToBatchRows(server, "Split of a dynamic Shape", [
      { op: "Split", inputs: ["s", "sizes"], outputs: ["batch", "rest"] },
    ], [{ name: "sizes", dims: [2], values: [1, 2], int64: true }]);
  });
});

Deno.test("ReduceProd/Sum/Max/Min of constant int64 extents fold, with axes and keepdims", async () => {
  const reduce = (op: string, output: string, attributes = {}, inputs = ["s"]) => ({
    op,
    inputs,
    outputs: [output],
    attributes,
  });
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(
      server,
      chain([2, 3, 4], [2, 12], [
        { op: "Shape", inputs: ["x"], outputs: ["s"] },
        reduce("ReduceMin", "first", { keepdims: 1 }),
        { op: "Slice", inputs: ["s", "one", "three"], outputs: ["tail"] },
        reduce("ReduceProd", "inner", { keepdims: 1 }, ["tail"]),
        { op: "Concat", inputs: ["first", "inner"], outputs: ["target"], attributes: { axis: 0 } },
        { op: "Reshape", inputs: ["x", "target"], outputs: ["y"] },
      ], [
        { name: "one", dims: [1], values: [1], int64: true },
        { name: "three", dims: [1], values: [3], int64: true },
      ]),
      "Reshape(x, [ReduceMin(Shape), ReduceProd(Shape[1:])])",
    );
    deepStrictEqual(operationTypes(conversion), ["RESHAPE"]);
    const m = { name: "m", dims: [2, 3], values: [4, -2, 9, 7, 0, -5], int64: true };
    const outputs = [
      { name: "sum", dims: [2], type: INT64 },
      { name: "max", dims: [1, 3], type: INT64 },
      { name: "min", dims: [], type: INT64 },
      { name: "prod", dims: [2, 1], type: INT64 },
    ];
    for (const opset of [13, 18]) {
      const axes = (name: string, values: number[], keepdims: number) =>
        opset >= 18 || name === "ReduceSum"
          ? { inputs: ["m", `${name}_axes`], attributes: { keepdims } }
          : { inputs: ["m"], attributes: { axes: values, keepdims } };
      const spec: GraphSpec = {
        inputs: [{ name: "x", dims: [2] }],
        outputs: [{ name: "y", dims: [2] }, ...outputs],
        nodes: [
          relu,
          { op: "ReduceSum", outputs: ["sum"], ...axes("ReduceSum", [1], 0) },
          { op: "ReduceMax", outputs: ["max"], ...axes("ReduceMax", [0], 1) },
          { op: "ReduceMin", inputs: ["m"], outputs: ["min"], attributes: { keepdims: 0 } },
          { op: "ReduceProd", outputs: ["prod"], ...axes("ReduceProd", [-1], 1) },
        ],
        initializers: [
          m,
          { name: "ReduceSum_axes", dims: [1], values: [1], int64: true },
          { name: "ReduceMax_axes", dims: [1], values: [0], int64: true },
          { name: "ReduceProd_axes", dims: [1], values: [-1], int64: true },
        ],
        opset,
      };
      const { conversion } = await compare(
        server,
        spec,
        `reductions of a constant, opset ${opset}`,
      );
      ok(!operationTypes(conversion).some((t) => t.startsWith("REDUCE")));
    }
  });
});

Deno.test("comparisons, logical operators, Where and Cast fold on constants (NaN casts to true)", async () => {
  const a = { name: "a", dims: [4], values: [1, 2, 3, 4], int64: true };
  const b = { name: "b", dims: [4], values: [3, 2, 1, 4], int64: true };
  const f = { name: "f", dims: [4], values: [0, NaN, -2.5, 0.75] };
  const bool = (name: string) => ({ name, dims: [4], type: BOOL });
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(
      server,
      {
        inputs: [{ name: "x", dims: [4] }],
        outputs: [
          { name: "y", dims: [4] },
          bool("eq"),
          bool("gt"),
          bool("lt"),
          bool("ne"),
          bool("and"),
          bool("or"),
          { name: "where", dims: [4], type: INT64 },
          { name: "float", dims: [4] },
          bool("truth"),
          { name: "int", dims: [4], type: INT64 },
        ],
        nodes: [
          relu,
          { op: "Equal", inputs: ["a", "b"], outputs: ["eq"] },
          { op: "Greater", inputs: ["a", "b"], outputs: ["gt"] },
          { op: "Less", inputs: ["a", "b"], outputs: ["lt"] },
          { op: "Not", inputs: ["eq"], outputs: ["ne"] },
          { op: "And", inputs: ["gt", "ne"], outputs: ["and"] },
          { op: "Or", inputs: ["lt", "eq"], outputs: ["or"] },
          { op: "Where", inputs: ["gt", "a", "b"], outputs: ["where"] },
          { op: "Cast", inputs: ["a"], outputs: ["float"], attributes: { to: FLOAT } },
          { op: "Cast", inputs: ["f"], outputs: ["truth"], attributes: { to: BOOL } },
          { op: "Cast", inputs: ["f"], outputs: ["int"], attributes: { to: INT64 } },
        ],
        // Casting NaN to an integer is undefined: this graph's f has none.
        initializers: [a, b, { ...f, values: [0, 0.5, -2.5, 0.75] }],
      },
      "folded comparisons and logic",
    );
    // Only the copies that make constants graph outputs remain.
    ok(
      operationTypes(conversion).every((t) =>
        ["RELU", "LOGICAL_AND", "ADD", "RESHAPE"].includes(t)
      ),
      operationTypes(conversion).join(),
    );
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [4] }],
        outputs: [{ name: "y", dims: [4] }, bool("truth")],
        nodes: [relu, { op: "Cast", inputs: ["f"], outputs: ["truth"], attributes: { to: BOOL } }],
        initializers: [f],
      },
      "Cast of NaN to bool",
    );
  });
});

Deno.test("Cast from bool selects between constants; Cast to bool compares with 0", async () => {
  const greater = { op: "Greater", inputs: ["x", "zero"], outputs: ["positive"] };
  const zero = { name: "zero", dims: [1], values: [0] };
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 3] }],
        outputs: [
          { name: "f", dims: [2, 3] },
          { name: "i", dims: [2, 3], type: INT32 },
          { name: "l", dims: [2, 3], type: INT64 },
        ],
        nodes: [
          greater,
          { op: "Cast", inputs: ["positive"], outputs: ["f"], attributes: { to: FLOAT } },
          { op: "Cast", inputs: ["positive"], outputs: ["i"], attributes: { to: INT32 } },
          { op: "Cast", inputs: ["positive"], outputs: ["l"], attributes: { to: INT64 } },
        ],
        initializers: [zero],
      },
      "Cast bool to float32, int32 and int64",
    );
    ok(!operationTypes(conversion).includes("CAST"), operationTypes(conversion).join());
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 3, 4] }],
        outputs: ["b", "n"].map((name) => ({ name, dims: [2, 3, 4], type: BOOL })),
        nodes: [
          { op: "Relu", inputs: ["x"], outputs: ["r"] },
          { op: "Cast", inputs: ["r"], outputs: ["b"], attributes: { to: BOOL } },
          { op: "Cast", inputs: ["x"], outputs: ["t"], attributes: { to: INT64 } },
          { op: "Cast", inputs: ["t"], outputs: ["n"], attributes: { to: BOOL } },
        ],
      },
      "Cast float32 and int64 to bool",
      3,
      undefined,
      6,
    );
    // The boolean's shape known only at execution: ones and zeros FILLed to it there.
    const bytes = onnxBytes({
      inputs: [{ name: "x", dims: ["N", 3] }],
      outputs: [{ name: "y", dims: ["N", 3] }],
      nodes: [greater, {
        op: "Cast",
        inputs: ["positive"],
        outputs: ["y"],
        attributes: { to: FLOAT },
      }],
      initializers: [zero],
    });
    for (const n of [1, 4]) await compareBytes(server, bytes, { x: [n, 3] }, `Cast at [${n},3]`);
  });
});

Deno.test("Where broadcasts its condition and values to the output's shape", async () => {
  await withTestServer({}, async (server) => {
    const { conversion } = await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 1, 4] }, { name: "v", dims: [3, 1] }],
        outputs: [{ name: "y", dims: [2, 3, 4] }, { name: "k", dims: [2, 3, 4], type: INT64 }],
        nodes: [
          { op: "Greater", inputs: ["x", "zero"], outputs: ["c"] },
          { op: "Where", inputs: ["c", "v", "minus"], outputs: ["y"] },
          { op: "Cast", inputs: ["v"], outputs: ["vi"], attributes: { to: INT64 } },
          { op: "Where", inputs: ["c", "seven", "vi"], outputs: ["k"] },
        ],
        initializers: [
          { name: "zero", dims: [1], values: [0] },
          { name: "minus", dims: [], values: [-1.5] },
          { name: "seven", dims: [4], values: [7, -7, 70000, -70000], int64: true },
        ],
      },
      "Where(c [2,1,4], v [3,1], scalar) and int64 values",
      5,
      undefined,
      8,
    );
    ok(operationTypes(conversion).includes("LOGICAL_AND"), operationTypes(conversion).join());
    // Shapes known only at execution: broadcast there (zeros FILLed to each input's shape).
    const bytes = onnxBytes({
      inputs: [{ name: "x", dims: ["N", 4] }, { name: "v", dims: ["M", 1] }],
      outputs: [{ name: "y", dims: ["N", 4] }],
      nodes: [
        { op: "Greater", inputs: ["x", "zero"], outputs: ["c"] },
        { op: "Where", inputs: ["c", "x", "v"], outputs: ["y"] },
      ],
      initializers: [{ name: "zero", dims: [1], values: [0] }],
    });
    for (const [n, m] of [[2, 2], [3, 1], [1, 3]]) {
      await compareBytes(server, bytes, { x: [n, 4], v: [m, 1] }, `Where at N=${n}, M=${m}`);
    }
  });
});

Deno.test("Clip with runtime min and max", async () => {
  await withTestServer({}, async (server) => {
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 3, 4] }, { name: "lo", dims: [] }, {
          name: "hi",
          dims: [],
        }],
        outputs: [{ name: "y", dims: [2, 3, 4] }],
        nodes: [
          { op: "Neg", inputs: ["hi"], outputs: ["low"] },
          { op: "Abs", inputs: ["lo"], outputs: ["high"] },
          { op: "Clip", inputs: ["x", "low", "high"], outputs: ["y"] },
        ],
        opset: 11,
      },
      "Clip(x, -hi, |lo|)",
    );
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 5] }, { name: "lo", dims: [] }],
        outputs: [{ name: "y", dims: [2, 5] }],
        nodes: [{ op: "Clip", inputs: ["x", "lo", "hi"], outputs: ["y"] }],
        initializers: [{ name: "hi", dims: [], values: [0.5] }],
      },
      "Clip(x, runtime min, constant max)",
    );
  });
});

Deno.test("rank-5 Transpose normalized to rank <= 4; rank-5 Slice, Squeeze and Unsqueeze", async () => {
  const transpose = (dims: (number | string)[], perm: number[], name = "t") => ({
    inputs: [{ name: "x", dims }],
    outputs: [{ name: "y", dims: perm.map((p) => dims[p]) }],
    nodes: [{ op: "Transpose", inputs: ["x"], outputs: ["y"], attributes: { perm }, name }],
  });
  await withTestServer({}, async (server) => {
    const cases: [number[], number[], string[]][] = [
      // PaddleOCR's attention: [B, N, 3, heads, dim] -> [3, B, heads, N, dim], B = 1.
      [[1, 6, 3, 2, 5], [2, 0, 3, 1, 4], ["RESHAPE", "TRANSPOSE", "RESHAPE"]],
      [[2, 3, 4, 5, 6], [0, 1, 2, 4, 3], ["RESHAPE", "TRANSPOSE", "RESHAPE"]],
      [[2, 1, 3, 1, 4], [4, 3, 2, 1, 0], ["RESHAPE", "TRANSPOSE", "RESHAPE"]],
      // Only unit axes move: one reshape.
      [[2, 1, 3, 1, 4], [0, 3, 2, 1, 4], ["RESHAPE"]],
    ];
    for (const [dims, perm, types] of cases) {
      const { conversion } = await compare(server, transpose(dims, perm), `[${dims}] by [${perm}]`);
      deepStrictEqual(operationTypes(conversion), types);
    }
    await compareBytes(
      server,
      onnxBytes(transpose(["N", 1, 3, 4, 5], [0, 1, 2, 4, 3])),
      { x: [2, 1, 3, 4, 5] },
      "a rank-5 transpose with a batch known only at execution",
    );
    // Five axes that stay five: one axis moved to its place at a time, each move a
    // RESHAPE -> TRANSPOSE -> RESHAPE of at most 4 merged axes.
    const { conversion } = await compare(
      server,
      transpose([2, 3, 4, 5, 6], [4, 2, 0, 3, 1]),
      "[2,3,4,5,6] by [4,2,0,3,1]",
    );
    strictEqual(operationTypes(conversion).filter((t) => t === "TRANSPOSE").length, 3);
    // Several extents known only at execution: the reshapes' targets computed there (SHAPE).
    for (
      const [dims, perm, given] of [
        [["N", 2, "M", 3, 4], [1, 0, 2, 3, 4], [2, 2, 3, 3, 4]],
        // PaddleOCR's attention with the batch and the line's length at execution.
        [["B", "T", 3, 2, 5], [2, 0, 3, 1, 4], [2, 6, 3, 2, 5]],
        [["B", "T", 3, 4, 5], [4, 2, 0, 3, 1], [3, 2, 3, 4, 5]],
      ] as [(number | string)[], number[], number[]][]
    ) {
      await compareBytes(
        server,
        onnxBytes(transpose(dims, perm)),
        { x: given },
        `[${dims}] by [${perm}] at [${given}]`,
      );
    }
    await compare(
      server,
      chain([3, 1, 4, 5, 2], [1, 4, 1, 5, 2], [
        { op: "Slice", inputs: ["x", "starts", "ends", "axes"], outputs: ["s"] },
        { op: "Squeeze", inputs: ["s", "zero"], outputs: ["q"] },
        { op: "Relu", inputs: ["q"], outputs: ["r"] },
        { op: "Unsqueeze", inputs: ["r", "two"], outputs: ["y"] },
      ], [
        { name: "starts", dims: [2], values: [1, 1], int64: true },
        { name: "ends", dims: [2], values: [2, 4], int64: true },
        { name: "axes", dims: [2], values: [0, 2], int64: true },
        { name: "zero", dims: [1], values: [0], int64: true },
        { name: "two", dims: [1], values: [2], int64: true },
      ]),
      "rank-5 Slice, Squeeze to rank 4, Unsqueeze to rank 5",
    );
  });
  match(
    refusal(chain([2, 3, 4, 5, 6], [1, 3, 4, 5, 6], [{
      op: "Slice",
      inputs: ["x", "starts", "ends", "axes", "steps"],
      outputs: ["y"],
      name: "s",
    }], [
      { name: "starts", dims: [1], values: [0], int64: true },
      { name: "ends", dims: [1], values: [2], int64: true },
      { name: "axes", dims: [1], values: [0], int64: true },
      { name: "steps", dims: [1], values: [2], int64: true },
    ])),
    /node 's' \(Slice\): a rank-5 Slice \(STRIDED_SLICE takes rank <= 4\) runs as SLICE, which needs steps of 1/,
  );
});

Deno.test("int64 and bool tensors reshape exactly and become graph outputs", async () => {
  const ids = [2147483647, -2147483648, 65536, -65537, 0, 123456789];
  const int64 = (name: string, dims: number[]) => ({ name, dims, type: INT64 });
  await withTestServer({}, async (server) => {
    const { conversion } = await compareWithValues(
      server,
      {
        inputs: [{ name: "ids", dims: [2, 3], type: INT64 }],
        outputs: [
          int64("same", [2, 3]),
          int64("r", [3, 2]),
          int64("flat", [1, 6]),
          int64("sq", [6]),
          int64("un", [2, 1, 3]),
          int64("row", [3]),
          int64("cols", [2, 2]),
        ],
        nodes: [
          { op: "Identity", inputs: ["ids"], outputs: ["same"] },
          { op: "Reshape", inputs: ["ids", "shape"], outputs: ["r"] },
          { op: "Flatten", inputs: ["ids"], outputs: ["flat"], attributes: { axis: 0 } },
          { op: "Squeeze", inputs: ["flat", "zero"], outputs: ["sq"] },
          { op: "Unsqueeze", inputs: ["ids", "one"], outputs: ["un"] },
          { op: "Gather", inputs: ["ids", "index"], outputs: ["row"] },
          { op: "Slice", inputs: ["ids", "one", "three", "one"], outputs: ["cols"] },
        ],
        initializers: [
          { name: "shape", dims: [2], values: [3, 2], int64: true },
          { name: "zero", dims: [1], values: [0], int64: true },
          { name: "one", dims: [1], values: [1], int64: true },
          { name: "three", dims: [1], values: [3], int64: true },
          { name: "index", dims: [], values: [1], int64: true },
        ],
      },
      "int64 Identity, Reshape, Flatten, Squeeze, Unsqueeze, Gather and Slice",
      { ids },
    );
    ok(!operationTypes(conversion).includes("SQUEEZE"), operationTypes(conversion).join());
    await compare(
      server,
      {
        inputs: [{ name: "x", dims: [2, 3] }],
        outputs: [
          { name: "r", dims: [3, 2], type: BOOL },
          { name: "u", dims: [2, 1, 3], type: BOOL },
          { name: "s", dims: [2, 3], type: BOOL },
        ],
        nodes: [
          { op: "Greater", inputs: ["x", "zero"], outputs: ["c"] },
          { op: "Reshape", inputs: ["c", "shape"], outputs: ["r"] },
          { op: "Unsqueeze", inputs: ["c", "one"], outputs: ["u"] },
          { op: "Squeeze", inputs: ["u", "one"], outputs: ["s"] },
        ],
        initializers: [
          { name: "zero", dims: [1], values: [0] },
          { name: "shape", dims: [2], values: [3, 2], int64: true },
          { name: "one", dims: [1], values: [1], int64: true },
        ],
      },
      "bool Reshape, Unsqueeze and Squeeze",
    );
    // A boolean of a shape known only at execution, reshaped there.
    const bytes = onnxBytes({
      inputs: [{ name: "x", dims: ["N", 3] }],
      outputs: [{ name: "y", dims: ["N", 1, 3], type: BOOL }],
      nodes: [
        { op: "Greater", inputs: ["x", "zero"], outputs: ["c"] },
        { op: "Unsqueeze", inputs: ["c", "one"], outputs: ["y"] },
      ],
      initializers: [
        { name: "zero", dims: [1], values: [0] },
        { name: "one", dims: [1], values: [1], int64: true },
      ],
    });
    for (const n of [2, 5]) {
      await compareBytes(server, bytes, { x: [n, 3] }, `bool Unsqueeze at N=${n}`);
    }
  });
});

Deno.test("Range, Cos and a batched MatMul fold on constants (a rotary position table); Range with a runtime bound runs at execution", async () => {
  const spec: GraphSpec = {
    inputs: [{ name: "x", dims: [2, 3] }],
    outputs: [
      { name: "y", dims: [2, 3] },
      { name: "table", dims: [2, 6, 4] },
      { name: "steps", dims: [3], type: INT64 },
    ],
    nodes: [
      relu,
      { op: "Range", inputs: ["start", "limit", "delta"], outputs: ["positions"] },
      { op: "Reshape", inputs: ["positions", "column"], outputs: ["column_positions"] },
      // [1, 6, 1] x [2, 1, 4]: leading extents broadcast.
      { op: "MatMul", inputs: ["column_positions", "frequencies"], outputs: ["angles"] },
      { op: "Cos", inputs: ["angles"], outputs: ["cos"] },
      { op: "Sin", inputs: ["angles"], outputs: ["sin"] },
      { op: "Add", inputs: ["cos", "sin"], outputs: ["table"] },
      { op: "Range", inputs: ["first", "last", "step"], outputs: ["steps"] },
    ],
    initializers: [
      { name: "start", dims: [], values: [0.5] },
      { name: "limit", dims: [], values: [7.6] },
      { name: "delta", dims: [], values: [1.1] },
      { name: "column", dims: [3], values: [1, -1, 1], int64: true },
      { name: "frequencies", dims: [2, 1, 4], values: [1, 0.5, 0.25, 0.125, 3, 2, 1, 0.1] },
      { name: "first", dims: [], values: [2], int64: true },
      { name: "last", dims: [], values: [11], int64: true },
      { name: "step", dims: [], values: [3], int64: true },
    ],
    opset: 13,
  };
  const conversion = convertOnnx(onnxBytes(spec));
  // Everything but the Relu folds; the two constant outputs are copied out (ADD 0 for the
  // float table, RESHAPE for the int32 steps).
  deepStrictEqual(operationTypes(conversion).sort(), ["ADD", "RELU", "RESHAPE"]);
  await withTestServer({}, async (server) => {
    await compare(server, spec, "rotary table", 1, 1e-6);
  });

  // A limit given at execution: RANGE (nnserve's extension), its length known from the value.
  const runtime = onnxBytes({
    inputs: [{ name: "x", dims: [1] }],
    outputs: [{ name: "r", dims: ["n"] }],
    nodes: [{ op: "Range", name: "positions", inputs: ["start", "x", "delta"], outputs: ["r"] }],
    initializers: [
      { name: "start", dims: [], values: [0] },
      { name: "delta", dims: [], values: [0.5] },
    ],
    opset: 13,
  });
  deepStrictEqual(operationTypes(convertOnnx(runtime)), ["RANGE"]);
  await withTestServer({}, async (server) => {
    for (const limit of [5.25, 2]) {
      await compareBytes(server, runtime, { x: [1] }, `Range to ${limit}`, {
        values: { x: [limit] },
      });
    }
  });
});
