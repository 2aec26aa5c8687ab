/**
 * What a control-flow operation inherits from the subgraphs it runs: an IF whose branch
 * holds an operation no device implements is itself unsupported, through any depth of
 * nesting, and needs the highest HAL version among them.
 */
import { strictEqual, throws } from "node:assert/strict";
import type { Operand, Operation, Subgraph } from "./model.ts";
import { inheritThroughReferences, MAX_SUBGRAPH_NESTING, referenceOrder } from "./references.ts";
import type { HalVersion, OperationType } from "../../nnapi/types.ts";

function reference(k: number): Operand {
  return {
    type: "SUBGRAPH",
    dimensions: [],
    scale: 0,
    zeroPoint: 0,
    lifetime: "SUBGRAPH",
    value: Uint32Array.of(k),
  };
}

function operation(type: OperationType, inputs: number[], supported = true): Operation {
  const halVersion: HalVersion = type === "IF" ? "V1_3" : "V1_0";
  return { type, inputs, outputs: [], supported, halVersion };
}

/** A graph whose operands are `operands` and whose operations are `operations`. */
function graph(operands: Operand[], operations: Operation[]): Subgraph {
  return { operands, operations, inputIndexes: [], outputIndexes: [], runOrder: [] };
}

Deno.test("an IF is supported only when every operation it runs, however nested, is", () => {
  const plain = graph([], [operation("ADD", [])]);
  const unsupported = graph([], [operation("QUANTIZED_LSTM", [], false)]);
  const nestedIf = (k: number) => graph([reference(k)], [operation("IF", [0, 0, 0])]);
  const referenced = [plain, unsupported, nestedIf(0), nestedIf(1)];
  const main = graph(
    [reference(2), reference(3)],
    [operation("IF", [0, 0, 0]), operation("IF", [0, 1, 1]), operation("ADD", [])],
  );
  inheritThroughReferences(
    main,
    referenced,
    referenceOrder(main.operands, referenced.map((g) => g.operands)),
  );
  strictEqual(main.operations[0].supported, true);
  strictEqual(main.operations[0].halVersion, "V1_3");
  strictEqual(main.operations[1].supported, false, "its else branch nests QUANTIZED_LSTM");
  strictEqual(main.operations[2].supported, true);
  strictEqual(referenced[3].operations[0].supported, false);
  strictEqual(referenced[2].operations[0].supported, true);
});

Deno.test("referenceOrder() puts each subgraph after those it references, however long the chain", () => {
  // 0 references 1, 1 references 2, ..., n - 2 references n - 1: n deep from the main graph.
  const chain = (n: number) =>
    Array.from({ length: n }, (_, k) => k < n - 1 ? [reference(k + 1)] : []);
  const order = referenceOrder([reference(0)], chain(MAX_SUBGRAPH_NESTING));
  strictEqual(order.join(), [...chain(MAX_SUBGRAPH_NESTING).keys()].reverse().join());
  throws(
    () => referenceOrder([reference(0)], chain(MAX_SUBGRAPH_NESTING + 1)),
    /nest 257 deep, more than the 256 allowed/,
  );
  // Deeper than any stack, unreferenced by the main graph: still no recursion, and a cycle.
  const long = chain(30_000);
  long[29_999] = [reference(15_000)];
  const cycle =
    "15000 -> 15001 -> 15002 -> 15003 -> 15004 -> 15005 -> ... -> 29998 -> 29999 -> 15000";
  throws(() => referenceOrder([], long), (error: Error) => error.message.includes(cycle));
});
