/**
 * An exact pre-pass of the search, for each memory space besides the host's: that space is
 * removed from a group of operations when using it there can never pay.
 * Operations that some device of the space supports form groups, joined where one reads what
 * another writes or both read one operand (so no copy made for one group serves another). A
 * plan that runs some of a group in the space moves at least one tensor there (each of those
 * operations reads a non-constant operand, and following them back reaches one written in
 * the host space); moving them to their cheapest host devices drops those moves and adds
 * none (their other readers are on the host), and costs at most what
 * the group could save in the space — per operation, its cheapest host cost less its
 * cheapest cost in the space — plus one subgraph overhead per operation. When that is less
 * than the fixed cost of one move (a move's cost grows with its bytes), every plan using the
 * space there is beaten, and the search need not consider it. A software gpu adapter's
 * 11 ms round trip against microseconds of work: Moonshine's 1769 operations went from a
 * capped beam of states (12 s, not optimal) to an exact search in 70 ms.
 */
import type { PartitionOperation, PartitionProblem } from "./problem.ts";

/**
 * The problem with each space's devices removed from the groups where they cannot pay. With
 * several spaces besides the host's, each is weighed against the host devices alone, which
 * stays exact while a tensor moving between two of them goes through the host (costing both
 * legs): a group moved to the host then makes every move it still needs from the host, which
 * costs no more than from its space.
 */
export function withoutHopelessSpaces(problem: PartitionProblem): PartitionProblem {
  const spaceOf = new Map(problem.devices.map((d) => [d.name, d.memorySpace]));
  const others = [...new Set(spaceOf.values())].filter((s) => s !== problem.hostSpace);
  if (others.length > 1 && !throughHost(problem, others)) return problem;
  let operations = problem.operations;
  for (const space of others) {
    operations = pruneSpace({ ...problem, operations }, space, spaceOf);
  }
  return { ...problem, operations };
}

/**
 * Whether a move between two of `spaces` costs at least a move from the host to the second
 * and one from the first to the host (as when it goes through the host); costs linear in
 * bytes, so checked at none and at the largest operand.
 */
function throughHost(problem: PartitionProblem, spaces: readonly string[]): boolean {
  const host = problem.hostSpace;
  const cost = problem.transferCost;
  const sizes = [0, Math.max(0, ...problem.operandBytes)];
  return spaces.every((a) =>
    spaces.every((b) =>
      a === b ||
      sizes.every((bytes) =>
        cost(a, b, bytes) >= Math.max(cost(host, b, bytes), cost(a, host, bytes))
      )
    )
  );
}

function pruneSpace(
  problem: PartitionProblem,
  space: string,
  spaceOf: ReadonlyMap<string, string>,
): PartitionOperation[] {
  const { operations } = problem;
  const inSpace = (device: string) => spaceOf.get(device) === space;
  const onHost = (device: string) => spaceOf.get(device) === problem.hostSpace;
  const capable = operations.map((op) => Object.keys(op.costs).some(inSpace));
  // Groups: union-find over capable operations.
  const root = operations.map((_, i) => i);
  const find = (i: number): number => root[i] === i ? i : (root[i] = find(root[i]));
  const written = new Set([...problem.modelInputs, ...operations.flatMap((op) => op.outputs)]);
  // Capable operations that write and read an operand, or read the same one, share copies.
  const sharer = new Map<number, number>();
  operations.forEach((op, i) => {
    if (!capable[i]) return;
    for (const x of [...op.inputs, ...op.outputs]) {
      const other = sharer.get(x);
      if (other !== undefined) root[find(i)] = find(other);
      else sharer.set(x, i);
    }
  });
  const savings = new Map<number, number>();
  const overhead = problem.subgraphOverhead ?? 0;
  operations.forEach((op, i) => {
    if (!capable[i]) return;
    // A group with an operation that reads constants only could run in the space without
    // any move: it keeps the space.
    if (!op.inputs.some((x) => written.has(x))) {
      savings.set(find(i), Infinity);
      return;
    }
    const costs = Object.entries(op.costs);
    const best = (keep: (device: string) => boolean) =>
      Math.min(...costs.filter(([d]) => keep(d)).map(([, c]) => c));
    // No host device: the space must be used (Infinity keeps it).
    const saved = Math.max(0, best(onHost) - best(inSpace)) + overhead;
    savings.set(find(i), (savings.get(find(i)) ?? 0) + saved);
  });
  const move = Math.min(
    problem.transferCost(problem.hostSpace, space, 0),
    problem.transferCost(space, problem.hostSpace, 0),
  );
  return operations.map((op, i) => {
    if (!capable[i] || !(savings.get(find(i))! < move)) return op;
    const costs = Object.fromEntries(Object.entries(op.costs).filter(([d]) => !inSpace(d)));
    return { ...op, costs };
  });
}
