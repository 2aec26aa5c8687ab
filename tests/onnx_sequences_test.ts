/**
 * ONNX sequences (#30), as torch exports write them: a Loop that builds a sequence unrolls at
 * conversion and the sequence operators become the tensor operators they stand for. Each
 * graph imported as published and compared with onnxruntime-node at two shapes.
 */
import { ok } from "node:assert/strict";
import { withTestServer } from "./server_fixture.ts";
import { compareBytes, expectImportRefused, operationTypes } from "./onnx/compare.ts";
import { type GraphSpec, INT64, onnxBytes } from "../tools/onnx_graphs.ts";

const BOOL = 9;

/** `for i in range(M): seq.append(x * i)`, then the sequence stacked, its length, its last. */
function buildsSequence(m: string | number): GraphSpec {
  return {
    inputs: [
      { name: "x", dims: ["N", 3] },
      ...(typeof m === "string" ? [{ name: m, dims: [], type: INT64 }] : []),
    ],
    outputs: [
      { name: "stacked", dims: [3, "N", 3] },
      { name: "length", dims: [], type: INT64 },
      { name: "last", dims: ["N", 3] },
    ],
    nodes: [
      { op: "SequenceEmpty", inputs: [], outputs: ["empty"], attributes: { dtype: 1 } },
      {
        op: "Loop",
        inputs: [typeof m === "string" ? m : "trips", "", "empty"],
        outputs: ["built"],
        attributes: {
          body: {
            graph: {
              inputs: [
                { name: "i", dims: [], type: INT64 },
                { name: "cond_in", dims: [], type: BOOL },
                { name: "seq_in", dims: ["N", 3], sequence: true },
              ],
              outputs: [
                { name: "cond_out", dims: [], type: BOOL },
                { name: "seq_out", dims: ["N", 3], sequence: true },
              ],
              nodes: [
                { op: "Cast", inputs: ["i"], outputs: ["fi"], attributes: { to: 1 } },
                { op: "Mul", inputs: ["x", "fi"], outputs: ["xi"] },
                { op: "SequenceInsert", inputs: ["seq_in", "xi"], outputs: ["seq_out"] },
                { op: "Identity", inputs: ["cond_in"], outputs: ["cond_out"] },
              ],
            },
          },
        },
        name: "builder",
      },
      {
        op: "ConcatFromSequence",
        inputs: ["built"],
        outputs: ["stacked"],
        attributes: { axis: 0, new_axis: 1 },
      },
      { op: "SequenceLength", inputs: ["built"], outputs: ["length"] },
      { op: "SequenceAt", inputs: ["built", "minus_one"], outputs: ["last"] },
    ],
    initializers: [
      { name: "trips", dims: [], values: [3], int64: true },
      { name: "minus_one", dims: [], values: [-1], int64: true },
    ],
    opset: 13,
  };
}

Deno.test("a Loop that builds a sequence unrolls at conversion; the sequence is stacked, counted and read", async () => {
  await withTestServer({}, async (server) => {
    const bytes = onnxBytes(buildsSequence(3));
    for (const n of [2, 5]) {
      const { conversion } = await compareBytes(server, bytes, { x: [n, 3] }, `N = ${n}`);
      const types = operationTypes(conversion);
      ok(!types.includes("WHILE") && types.includes("CONCATENATION"), types.join());
    }
  });
});

Deno.test("a Loop with a trip count known only at execution grows its sequence as a tensor: torch.stack and torch.cat of it", async () => {
  await withTestServer({}, async (server) => {
    const stackOnly = (newAxis: number, axis: number): GraphSpec => {
      const spec = buildsSequence("m");
      spec.nodes = spec.nodes.filter((n) => n.op !== "SequenceLength" && n.op !== "SequenceAt");
      spec.nodes.find((n) => n.op === "ConcatFromSequence")!.attributes = {
        axis,
        new_axis: newAxis,
      };
      // WHILE accumulates rows from a row of zeros, whose extents must be known.
      spec.inputs[0].dims = [2, 3];
      spec.outputs = [{ name: "stacked", dims: newAxis ? [2, "M", 3] : ["M2", 3] }];
      return spec;
    };
    // torch.stack(out, dim=1): [2, M, 3]; torch.cat(out): [M*2, 3].
    for (const [newAxis, axis] of [[1, 1], [0, 0]]) {
      for (const [m, n] of [[2, 2], [5, 2]]) {
        const { conversion } = await compareBytes(
          server,
          onnxBytes(stackOnly(newAxis, axis)),
          { x: [n, 3], m: [] },
          `new_axis ${newAxis}, axis ${axis}, M = ${m}, N = ${n}`,
          { values: { m: [m] } },
        );
        ok(operationTypes(conversion).includes("WHILE"));
      }
    }
  });
});

Deno.test("a sequence a Loop grows at execution and reads otherwise than by ConcatFromSequence is refused naming the node", async () => {
  await withTestServer({}, async (server) => {
    await expectImportRefused(
      server,
      buildsSequence("m"),
      /node 'builder' \(Loop\): the Loop carries or reads the sequence 'empty'.*read after the loop only by ConcatFromSequence/,
    );
  });
});

Deno.test("SplitToSequence, SequenceErase, SequenceInsert at a position and ConcatFromSequence along an axis", async () => {
  await withTestServer({}, async (server) => {
    const spec: GraphSpec = {
      inputs: [{ name: "x", dims: [4, "W"] }],
      outputs: [
        { name: "rows", dims: ["W", 4] },
        { name: "parts", dims: [4, "W"] },
        { name: "count", dims: [], type: INT64 },
      ],
      nodes: [
        // Rows of x (keepdims 0: [W] each); the second erased, its Relu put first.
        { op: "SplitToSequence", inputs: ["x"], outputs: ["s"], attributes: { keepdims: 0 } },
        { op: "SequenceAt", inputs: ["s", "one"], outputs: ["second"] },
        { op: "Relu", inputs: ["second"], outputs: ["r"] },
        { op: "SequenceErase", inputs: ["s", "one"], outputs: ["erased"] },
        { op: "SequenceInsert", inputs: ["erased", "r", "zero"], outputs: ["reordered"] },
        {
          op: "ConcatFromSequence",
          inputs: ["reordered"],
          outputs: ["rows"],
          attributes: { axis: 1, new_axis: 1 },
        },
        { op: "SequenceLength", inputs: ["reordered"], outputs: ["count"] },
        // Parts of 1 and 3 rows, concatenated back in reverse order.
        { op: "SplitToSequence", inputs: ["x", "sizes"], outputs: ["p"] },
        { op: "SequenceAt", inputs: ["p", "one"], outputs: ["tail"] },
        { op: "SequenceAt", inputs: ["p", "zero"], outputs: ["head"] },
        { op: "SequenceConstruct", inputs: ["tail", "head"], outputs: ["swapped"] },
        {
          op: "ConcatFromSequence",
          inputs: ["swapped"],
          outputs: ["parts"],
          attributes: { axis: 0 },
        },
      ],
      initializers: [
        { name: "zero", dims: [], values: [0], int64: true },
        { name: "one", dims: [], values: [1], int64: true },
        { name: "sizes", dims: [2], values: [1, 3], int64: true },
      ],
      opset: 13,
    };
    for (const w of [2, 6]) await compareBytes(server, onnxBytes(spec), { x: [4, w] }, `W = ${w}`);
  });
});
