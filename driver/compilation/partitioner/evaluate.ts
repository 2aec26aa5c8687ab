/**
 * From a device per operation to the plan: consecutive operations on one device merged into
 * maximal subgraphs, each with its crossing operands, transfers and cost. The one place that
 * defines what a plan costs; the search keeps the same accounting incrementally.
 *
 * Accounting: an operand lives in the memory space of the device that wrote it (model inputs:
 * the host space). The first subgraph that reads it in another space pays one move from its
 * home there; later readers in that space read that copy. A model output written outside the
 * host space pays its move home, charged to the subgraph that wrote it. Each subgraph also
 * pays the problem's `subgraphOverhead`. Copies in a transient space last one subgraph: when
 * it ends, what it wrote that later operations read moves home to the host (charged to it),
 * and its copies of other operands are gone.
 */
import { type IndexedProblem, type Partition, type Subgraph, type Transfer } from "./problem.ts";

/** The plan for `devices` (a device position per operation position). */
export function evaluate(ix: IndexedProblem, devices: number[], optimal: boolean): Partition {
  const names = ix.problem.devices.map((d) => d.name);
  const home = new Map<number, number>();
  const present = new Map<number, number>();
  for (const x of ix.problem.modelInputs) {
    home.set(x, ix.host);
    present.set(x, 1 << ix.host);
  }
  const subgraphOf = new Map<number, number>(); // operand → subgraph that wrote it
  const subgraphs: Subgraph[] = [];
  let current: Subgraph | undefined;
  /** Ends a subgraph that ran on device `d` before operation position `next`. */
  const end = (d: number, next: number) => {
    const s = ix.spaceOf[d];
    if (!ix.transient[s]) return;
    const bit = 1 << s;
    const hostBit = 1 << ix.host;
    for (const [x, mask] of present) {
      if ((mask & bit) === 0) continue;
      if (home.get(x) !== s) {
        present.set(x, mask & ~bit);
      } else if ((ix.lastRead.get(x) ?? -1) >= next) {
        if ((mask & hostBit) === 0) {
          const t = {
            operand: x,
            from: ix.spaces[s],
            to: ix.spaces[ix.host],
            bytes: ix.problem.operandBytes[x],
            cost: ix.transfer(x, s, ix.host),
          };
          current!.transfers.push(t);
          current!.cost += t.cost;
        }
        home.set(x, ix.host);
        present.set(x, hostBit);
      }
    }
  };
  ix.operations.forEach((op, i) => {
    const d = devices[i];
    const s = ix.spaceOf[d];
    if (current === undefined || current.device !== names[d]) {
      if (i > 0) end(devices[i - 1], i);
      current = {
        device: names[d],
        operations: [],
        inputs: [],
        outputs: [],
        transfers: [],
        compute: ix.overhead,
        cost: ix.overhead,
      };
      subgraphs.push(current);
    }
    const here = subgraphs.length - 1;
    const cost = ix.operations[i].costs[d];
    if (cost === undefined) {
      throw new Error(`Operation ${op.index} is not supported on ${names[d]}`);
    }
    current.operations.push(op.index);
    current.compute += cost;
    current.cost += cost;
    const move = (x: number, from: number, to: number): Transfer => {
      const t = {
        operand: x,
        from: ix.spaces[from],
        to: ix.spaces[to],
        bytes: ix.problem.operandBytes[x],
        cost: ix.transfer(x, from, to),
      };
      current!.transfers.push(t);
      current!.cost += t.cost;
      return t;
    };
    for (const x of op.inputs) {
      const writer = subgraphOf.get(x);
      if (writer !== here && !current.inputs.includes(x)) current.inputs.push(x);
      if (writer !== undefined && writer !== here) {
        const outputs = subgraphs[writer].outputs;
        if (!outputs.includes(x)) outputs.push(x);
      }
      const mask = present.get(x)!;
      if ((mask & (1 << s)) === 0) {
        move(x, home.get(x)!, s);
        present.set(x, mask | (1 << s));
      }
    }
    for (const y of op.outputs) {
      subgraphOf.set(y, here);
      home.set(y, s);
      present.set(y, 1 << s);
      if (ix.modelOutputs.has(y)) {
        current.outputs.push(y);
        if (s !== ix.host) {
          move(y, s, ix.host);
          present.set(y, (1 << s) | (1 << ix.host));
        }
      }
    }
  });
  for (const g of subgraphs) {
    g.inputs.sort((a, b) => a - b);
    g.outputs.sort((a, b) => a - b);
  }
  return {
    subgraphs,
    cost: subgraphs.reduce((sum, g) => sum + g.cost, 0),
    switches: Math.max(0, subgraphs.length - 1),
    optimal,
  };
}
