/**
 * From a device per operation to the plan: consecutive operations on one device merged into
 * maximal subgraphs, each with its crossing operands, transfers and cost. The one place that
 * defines what a plan costs; the search keeps the same accounting incrementally.
 *
 * Accounting: an operand lives in the memory space of the device that wrote it (model inputs:
 * the host space). The first subgraph that reads it in another space pays one move from its
 * home there; later readers in that space read that copy. A model output written outside the
 * host space pays its move home, charged to the subgraph that wrote it. Each subgraph also
 * pays the problem's `subgraphOverhead`.
 */
import {
  type IndexedProblem,
  type Objective,
  type Partition,
  type Subgraph,
  type Transfer,
} from "./problem.ts";

/** The plan for `devices` (a device position per operation position). */
export function evaluate(
  ix: IndexedProblem,
  devices: number[],
  objective: Objective,
  optimal: boolean,
): Partition {
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
  ix.operations.forEach((op, i) => {
    const d = devices[i];
    const s = ix.spaceOf[d];
    if (current === undefined || current.device !== names[d]) {
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
  return summarise(subgraphs, objective, optimal);
}

/**
 * Per-device loads of `devices` (their sum is the latency): `evaluate`'s accounting without
 * building subgraphs, for the throughput heuristic's many trial moves.
 */
export function measure(ix: IndexedProblem, devices: number[]): number[] {
  const loads = new Array<number>(ix.problem.devices.length).fill(0);
  const home = new Uint8Array(ix.operandCount);
  const present = new Uint32Array(ix.operandCount);
  for (const x of ix.problem.modelInputs) {
    home[x] = ix.host;
    present[x] = 1 << ix.host;
  }
  let previous = -1;
  ix.operations.forEach((op, i) => {
    const d = devices[i];
    const s = ix.spaceOf[d];
    let charge = op.costs[d]! + (d === previous ? 0 : ix.overhead);
    previous = d;
    for (const x of op.inputs) {
      if ((present[x] & (1 << s)) === 0) {
        charge += ix.transfer(x, home[x], s);
        present[x] |= 1 << s;
      }
    }
    for (const y of op.outputs) {
      home[y] = s;
      present[y] = 1 << s;
      if (ix.modelOutputs.has(y) && s !== ix.host) {
        charge += ix.transfer(y, s, ix.host);
        present[y] |= 1 << ix.host;
      }
    }
    loads[d] += charge;
  });
  return loads;
}

/** Totals of a list of subgraphs under an objective. */
function summarise(subgraphs: Subgraph[], objective: Objective, optimal: boolean): Partition {
  const loads = new Map<string, number>();
  let latency = 0;
  for (const g of subgraphs) {
    latency += g.cost;
    loads.set(g.device, (loads.get(g.device) ?? 0) + g.cost);
  }
  const bottleneck = Math.max(0, ...loads.values());
  return {
    subgraphs,
    objective,
    cost: objective === "latency" ? latency : bottleneck,
    latency,
    bottleneck,
    switches: Math.max(0, subgraphs.length - 1),
    optimal,
  };
}
