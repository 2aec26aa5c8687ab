/**
 * ONNX's single-assignment rule, checked before any node is converted: every value name is
 * given once (by a graph input, an initializer or one node output), and every output of the
 * main graph names a value that is given (a subgraph's may name one of the graphs around it). A second writer of a name would otherwise silently replace the
 * first one's value, and an output nothing gives would fail deep in the conversion.
 */
import { fileFault } from "../errors.ts";
import { type GraphProto, list, type NodeProto } from "./decode.ts";

/** How a message names a node: its name, else its position and op type. */
function describe(node: NodeProto, index: number): string {
  return node.name ? `node '${node.name}' (${node.opType})` : `node #${index} (${node.opType})`;
}

/**
 * Checks `graph` and each of its subgraphs (If branches, Loop bodies) on its own; throws an
 * INVALID_ARGUMENT naming the name and who gives it.
 */
export function checkGraphNames(graph: GraphProto): void {
  // A stack, not recursion: nesting depth is the file's to choose.
  const pending: { graph: GraphProto; where: string }[] = [{ graph, where: "" }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    checkOneGraph(next.graph, next.where);
    list(next.graph.node).forEach((node, index) => {
      for (const attribute of list(node.attribute)) {
        const where = `the subgraph '${attribute.name}' of ${describe(node, index)}: `;
        if (attribute.g) pending.push({ graph: attribute.g, where });
        for (const g of list(attribute.graphs)) pending.push({ graph: g, where });
      }
    });
  }
}

function checkOneGraph(graph: GraphProto, where: string): void {
  /** Who gives each name: "graph input", "initializer" or a node. */
  const givenBy = new Map<string, string>();
  for (const input of list(graph.input)) givenBy.set(input.name ?? "", "a graph input");
  for (const initializer of list(graph.initializer)) {
    // An initializer may share its name with a graph input (its default value).
    if (!givenBy.has(initializer.name ?? "")) {
      givenBy.set(initializer.name ?? "", "an initializer");
    }
  }
  list(graph.node).forEach((node, index) => {
    for (const name of list(node.output)) {
      if (name === "") continue; // an omitted optional output
      const earlier = givenBy.get(name);
      if (earlier !== undefined) {
        throw fileFault(
          `${where}${describe(node, index)} writes '${name}', which ${earlier} gives ` +
            "already: every value must have one producer",
        );
      }
      givenBy.set(name, describe(node, index));
    }
  });
  list(graph.output).forEach((output, index) => {
    const name = output.name ?? "";
    if (name === "") throw fileFault(`${where}graph output #${index} has no name`);
    // A subgraph's output may name a value of the graphs around it.
    if (where === "" && !givenBy.has(name)) {
      throw fileFault(
        `${where}graph output '${name}' is not produced by any node, initializer or input`,
      );
    }
  });
}
