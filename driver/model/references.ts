/**
 * Subgraph references between a model's graphs (NNAPI `Model.referenced`): where a SUBGRAPH
 * operand may be read, the absence of reference cycles (NNAPI checkNoReferenceCycles) and of
 * absurd nesting, and what a control-flow operation inherits from the subgraphs it runs: it
 * is supported only if every operation they run is, and needs the HAL version they need.
 */
import { fail } from "./operands.ts";
import type { Operand, Subgraph } from "./model.ts";
import type { OperationJson } from "./model_schema.ts";
import { subgraphIndex } from "../../operations/common/control_flow.ts";
import { type HalVersion, laterHal, type OperationType } from "../../nnapi/types.ts";

/** The input positions at which each control-flow operation takes a subgraph reference. */
const REFERENCE_INPUTS: Partial<Record<OperationType, readonly number[]>> = {
  IF: [1, 2],
  WHILE: [0, 1],
};

/** Fails unless SUBGRAPH operands are read only where IF and WHILE take a subgraph. */
export function checkReferenceReaders(
  operations: readonly OperationJson[],
  operands: readonly Operand[],
): void {
  operations.forEach((op, k) => {
    op.inputs.forEach((i, j) => {
      if (operands[i]?.lifetime !== "SUBGRAPH" || REFERENCE_INPUTS[op.type]?.includes(j)) return;
      fail(
        `operation ${k} (${op.type}): input ${j} (operand ${i}) is a subgraph reference; ` +
          "only IF inputs 1 and 2 and WHILE inputs 0 and 1 take one",
        ["operations", k, "inputs", j],
      );
    });
  });
}

/** The SUBGRAPH operands of one graph: operand index and the subgraph it names. */
function references(operands: readonly Operand[]): { operand: number; subgraph: number }[] {
  return operands.flatMap((o, operand) =>
    o.lifetime === "SUBGRAPH" ? [{ operand, subgraph: subgraphIndex(o.value) }] : []
  );
}

/**
 * How deep subgraphs may nest (an IF in a WHILE body in an IF branch is 3 deep). NNAPI sets
 * no limit; this one keeps validation and execution, which recurse per level at run time,
 * far from the stack's end while no real model comes near it.
 */
export const MAX_SUBGRAPH_NESTING = 256;

/**
 * The referenced subgraphs (their operand lists) in an order where each comes after every
 * subgraph it references. Fails naming a cycle of references (NNAPI
 * checkNoReferenceCycles: every referenced subgraph is checked, used or not; the main graph
 * cannot be referenced) or nesting past {@link MAX_SUBGRAPH_NESTING}. Iterative, so no
 * model can exhaust the stack here.
 */
export function referenceOrder(
  main: readonly Operand[],
  referenced: readonly (readonly Operand[])[],
): number[] {
  const named = referenced.map((operands) => references(operands));
  const pending = named.map((list) => new Set(list.map((r) => r.subgraph)));
  const users = referenced.map(() => [] as number[]);
  pending.forEach((set, k) => set.forEach((j) => users[j].push(k)));
  const order = referenced.flatMap((_, k) => pending[k].size === 0 ? [k] : []);
  for (let at = 0; at < order.length; at++) {
    for (const k of users[order[at]]) {
      pending[k].delete(order[at]);
      if (pending[k].size === 0) order.push(k);
    }
  }
  if (order.length < referenced.length) failCycle(named, pending);
  const depth = new Array<number>(referenced.length).fill(1);
  for (const k of order) {
    for (const { subgraph } of named[k]) depth[k] = Math.max(depth[k], depth[subgraph] + 1);
  }
  const deepest = references(main).reduce((n, r) => Math.max(n, depth[r.subgraph]), 0);
  if (deepest > MAX_SUBGRAPH_NESTING) {
    fail(
      `referenced subgraphs nest ${deepest} deep, more than the ${MAX_SUBGRAPH_NESTING} allowed`,
      ["referenced"],
    );
  }
  return order;
}

/** Fails naming one cycle among the subgraphs still `pending` (each references another). */
function failCycle(
  named: readonly { operand: number; subgraph: number }[][],
  pending: readonly ReadonlySet<number>[],
): never {
  const path: number[] = [pending.findIndex((set) => set.size > 0)];
  const position = new Map([[path[0], 0]]);
  for (;;) {
    const k = path[path.length - 1];
    const next = named[k].find((r) => pending[r.subgraph].size > 0)!;
    const start = position.get(next.subgraph);
    if (start !== undefined) {
      const cycle = [...path.slice(start), next.subgraph];
      const shown = cycle.length > 12 ? [...cycle.slice(0, 6), "...", ...cycle.slice(-3)] : cycle;
      fail(
        `referenced subgraphs form a cycle: ${shown.join(" -> ")} ` +
          `(referenced subgraph ${k}, operand ${next.operand})`,
        ["referenced", k, "operands", next.operand],
      );
    }
    position.set(next.subgraph, path.length);
    path.push(next.subgraph);
  }
}

/**
 * Makes each control-flow operation (in the main graph and every referenced subgraph)
 * supported only when every operation of the subgraphs it runs, nested ones included, is,
 * and makes it need their HAL version: `supported-operations` then tells the truth about
 * IF and WHILE. `order` is {@link referenceOrder}'s.
 */
export function inheritThroughReferences(
  main: Subgraph,
  referenced: readonly Subgraph[],
  order: readonly number[],
): void {
  const summaries: { supported: boolean; halVersion: HalVersion }[] = [];
  const inherit = (graph: Subgraph) => {
    for (const op of graph.operations) {
      for (const i of op.inputs) {
        const operand = graph.operands[i];
        if (operand.lifetime !== "SUBGRAPH") continue;
        const inner = summaries[subgraphIndex(operand.value)];
        op.supported &&= inner.supported;
        op.halVersion = laterHal(op.halVersion, inner.halVersion);
      }
    }
  };
  for (const k of order) {
    const graph = referenced[k];
    inherit(graph);
    summaries[k] = {
      supported: graph.operations.every((op) => op.supported),
      halVersion: graph.operations.reduce<HalVersion>(
        (v, op) => laterHal(v, op.halVersion),
        "V1_3",
      ),
    };
  }
  inherit(main);
}
