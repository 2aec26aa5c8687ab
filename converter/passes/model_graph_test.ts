/**
 * ModelGraph's reader and writer index: lookups answer as a scan of every operation would,
 * after the edits the passes make, and cost a value's readers rather than the graph's size.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { ModelJson, OperandJson } from "../../driver/model/model_schema.ts";
import { ModelGraph } from "./model_graph.ts";

const TENSOR: OperandJson = {
  type: "TENSOR_FLOAT32",
  dimensions: [4],
  scale: 0,
  zeroPoint: 0,
  lifetime: "TEMPORARY_VARIABLE",
};

/** A chain of `length` RELUs from operand 0 (the input) to operand `length` (the output). */
function reluChain(length: number): ModelJson {
  return {
    operands: Array.from({ length: length + 1 }, (_, i) => ({
      ...TENSOR,
      lifetime: i === 0 ? "MODEL_INPUT" : i === length ? "MODEL_OUTPUT" : "TEMPORARY_VARIABLE",
    })),
    operations: Array.from({ length }, (_, i) => ({ type: "RELU", inputs: [i], outputs: [i + 1] })),
    inputIndexes: [0],
    outputIndexes: [length],
    relaxComputationFloat32toFloat16: false,
  };
}

const indexes = (found: { index: number }[]) => found.map((f) => f.index);

Deno.test("readers and writers follow setInput, setOutput, replace, remove and insert", () => {
  const graph = new ModelGraph(reluChain(3));
  deepStrictEqual(indexes(graph.readers(1)), [1]);
  strictEqual(graph.writer(1)?.index, 0);
  strictEqual(graph.soleReader(3), undefined, "a model output has no sole reader");
  // Operation 2 reads operand 0 instead of 2: 2 has no reader left, 0 has two.
  graph.setInput(2, 0, 0);
  deepStrictEqual(indexes(graph.readers(0)), [0, 2]);
  deepStrictEqual(graph.readers(2), []);
  strictEqual(graph.soleReader(0), undefined);
  // Operation 0 writes operand 2; operand 1 has no writer.
  graph.setOutput(0, 0, 2);
  strictEqual(graph.writer(2)?.index, 0);
  strictEqual(graph.writer(1), undefined);
  graph.replace(1, { type: "TANH", inputs: [2], outputs: [1] });
  strictEqual(graph.soleReader(2)?.operation.type, "TANH");
  strictEqual(graph.writer(1)?.index, 1);
  graph.remove(1);
  deepStrictEqual(graph.readers(2), []);
  strictEqual(graph.writer(1), undefined);
  // Inserting before operation 0 moves every index by one.
  graph.insert(0, "RELU", [3], [1]);
  strictEqual(graph.writer(1)?.index, 0);
  deepStrictEqual(indexes(graph.readers(0)), [1, 3]);
  graph.replaceAll([{ type: "RELU", inputs: [0], outputs: [3] }]);
  deepStrictEqual(indexes(graph.readers(0)), [0]);
  strictEqual(graph.writer(3)?.index, 0);
});

Deno.test("a value read by 50,000 operations is looked up in far less than a scan per reader", () => {
  const readers = 50_000;
  const graph = new ModelGraph({
    ...reluChain(1),
    operations: Array.from(
      { length: readers },
      () => ({ type: "RELU", inputs: [0], outputs: [1] }),
    ),
  });
  const started = performance.now();
  // A pass asking each reader's input for its sole reader: with a scan of every operation
  // per lookup, 2.5 x 10^9 steps (minutes); indexed, each stops at the second reader.
  for (let i = 0; i < readers; i++) ok(graph.soleReader(0) === undefined);
  const ms = performance.now() - started;
  // Milliseconds here; a generous bound for a loaded machine.
  ok(ms < 5000, `${readers} lookups took ${ms} ms`);
});
