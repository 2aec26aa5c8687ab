import { deepStrictEqual, ok, throws } from "node:assert/strict";
import { seededFloats } from "../../../kernels/seeded_random.ts";
import { evaluate } from "./evaluate.ts";
import { withoutHopelessSpaces } from "./hopeless_spaces.ts";
import { indexProblem, less } from "./problem.ts";
import {
  evaluateAssignment,
  partition,
  type PartitionDevice,
  type PartitionOperation,
  type PartitionProblem,
  reassign,
  UnsupportedOperations,
} from "./partitioner.ts";

const CPU: PartitionDevice = { name: "cpu", memorySpace: "host" };
const NPU: PartitionDevice = { name: "npu", memorySpace: "npu" };

/** 1 µs per transfer plus 1 µs per 100 bytes. */
function linkCost(_from: string, _to: string, bytes: number): number {
  return 1 + bytes / 100;
}

/**
 * A chain: operand 0 is the model input, operation i reads operand i and writes i + 1, the
 * last one is the model output; 1000 bytes each (an 11 µs transfer).
 */
function chain(costs: Record<string, number>[], devices = [CPU, NPU]): PartitionProblem {
  return {
    devices,
    operations: costs.map((c, i) => ({ index: i, inputs: [i], outputs: [i + 1], costs: c })),
    operandBytes: costs.map(() => 1000).concat(1000),
    modelInputs: [0],
    modelOutputs: [costs.length],
    hostSpace: "host",
    transferCost: linkCost,
  };
}

/**
 * Each operation on its own cheapest device (ties: the earlier one), transfers ignored when
 * choosing but counted in the result: the baseline the search must never lose to.
 */
function naivePartition(problem: PartitionProblem): ReturnType<typeof partition> {
  const ix = indexProblem(problem);
  const devices = ix.operations.map((op) =>
    op.allowed.reduce((a, b) => op.costs[b]! < op.costs[a]! ? b : a)
  );
  return evaluate(ix, devices, false);
}

/** The problem with operations (model index -> device) allowed only on the named device. */
function pin(problem: PartitionProblem, pins: Record<number, string>): PartitionProblem {
  return {
    ...problem,
    operations: problem.operations.map((op) => {
      const device = pins[op.index];
      if (device === undefined) return op;
      const costs = Object.hasOwn(op.costs, device) ? { [device]: op.costs[device] } : {};
      return { ...op, costs };
    }),
  };
}

Deno.test("partition() absorbs an island that the per-operation choice leaves", () => {
  const costs = [0, 1, 2, 3, 4].map((i) => i === 2 ? { cpu: 0.5, npu: 1 } : { cpu: 10, npu: 1 });
  const problem = chain(costs);
  const naive = naivePartition(problem);
  deepStrictEqual(naive.subgraphs.map((g) => g.device), ["npu", "cpu", "npu"]);
  deepStrictEqual(naive.switches, 2);
  deepStrictEqual(naive.cost, 4.5 + 4 * 11);
  const plan = partition(problem);
  deepStrictEqual(plan.subgraphs.map((g) => [g.device, g.operations]), [["npu", [0, 1, 2, 3, 4]]]);
  deepStrictEqual(plan.switches, 0);
  deepStrictEqual(plan.cost, 5 + 2 * 11);
  ok(plan.optimal);
});

Deno.test("partition() keeps an island whose saving beats its two transfers", () => {
  const costs = [0, 1, 2, 3, 4].map((i) => i === 2 ? { cpu: 0.5, npu: 100 } : { cpu: 30, npu: 1 });
  const plan = partition(chain(costs));
  deepStrictEqual(plan.subgraphs.map((g) => g.device), ["npu", "cpu", "npu"]);
  deepStrictEqual(plan.cost, 4.5 + 4 * 11);
});

Deno.test("subgraphs name the operands crossing them and the transfers they pay", () => {
  const plan = evaluateAssignment(chain([{ cpu: 1 }, { npu: 2 }, { cpu: 3 }, { cpu: 4 }]), {
    0: "cpu",
    1: "npu",
    2: "cpu",
    3: "cpu",
  });
  deepStrictEqual(plan.subgraphs, [
    {
      device: "cpu",
      operations: [0],
      inputs: [0],
      outputs: [1],
      transfers: [],
      compute: 1,
      cost: 1,
    },
    {
      device: "npu",
      operations: [1],
      inputs: [1],
      outputs: [2],
      transfers: [{ operand: 1, from: "host", to: "npu", bytes: 1000, cost: 11 }],
      compute: 2,
      cost: 13,
    },
    {
      device: "cpu",
      operations: [2, 3],
      inputs: [2],
      outputs: [4],
      transfers: [{ operand: 2, from: "npu", to: "host", bytes: 1000, cost: 11 }],
      compute: 7,
      cost: 18,
    },
  ]);
  deepStrictEqual([plan.cost, plan.switches, plan.optimal], [32, 2, false]);
});

Deno.test("an operand moves to a memory space once, however many readers it has there", () => {
  const problem: PartitionProblem = {
    devices: [CPU, NPU],
    operations: [
      { index: 0, inputs: [0], outputs: [1], costs: { npu: 1 } },
      { index: 1, inputs: [1], outputs: [2], costs: { cpu: 1 } },
      { index: 2, inputs: [1, 2, 1], outputs: [3], costs: { cpu: 1 } },
    ],
    operandBytes: [100, 100, 100, 100],
    modelInputs: [0],
    modelOutputs: [3],
    hostSpace: "host",
    transferCost: linkCost,
  };
  const plan = partition(problem);
  deepStrictEqual(plan.subgraphs.map((g) => g.transfers.map((t) => [t.operand, t.to])), [
    [[0, "npu"]],
    [[1, "host"]],
  ]);
  deepStrictEqual(plan.cost, 3 + 2 * 2);
});

Deno.test("model outputs return to the host space, once, paid by the subgraph writing them", () => {
  const problem: PartitionProblem = {
    devices: [CPU, NPU],
    operations: [
      { index: 0, inputs: [0], outputs: [1], costs: { npu: 1 } },
      { index: 1, inputs: [1], outputs: [2], costs: { cpu: 1 } },
    ],
    operandBytes: [100, 300, 100],
    modelInputs: [0],
    modelOutputs: [1, 2],
    hostSpace: "host",
    transferCost: linkCost,
  };
  const plan = partition(problem);
  deepStrictEqual(plan.subgraphs.map((g) => [g.outputs, g.transfers.map((t) => t.operand)]), [
    [[1], [0, 1]],
    [[2], []],
  ]);
  deepStrictEqual(plan.cost, 2 + 2 + 4);
});

Deno.test("devices sharing a memory space exchange tensors for free", () => {
  const fast: PartitionDevice = { name: "cpu-fast", memorySpace: "host" };
  const plan = partition(chain([{ cpu: 1 }, { "cpu-fast": 1 }, { cpu: 1 }], [CPU, fast]));
  deepStrictEqual(plan.subgraphs.map((g) => g.device), ["cpu", "cpu-fast", "cpu"]);
  deepStrictEqual(plan.subgraphs.flatMap((g) => g.transfers), []);
  deepStrictEqual(plan.cost, 3);
});

Deno.test("partition() gives ties to the earlier device, then to fewer subgraphs", () => {
  const fast: PartitionDevice = { name: "cpu-fast", memorySpace: "host" };
  const even = [0, 1, 2].map(() => ({ cpu: 1, "cpu-fast": 1 }));
  deepStrictEqual(partition(chain(even, [CPU, fast])).subgraphs.map((g) => g.device), ["cpu"]);
  deepStrictEqual(partition(chain(even, [fast, CPU])).subgraphs.map((g) => g.device), ["cpu-fast"]);
  const split: Record<string, number>[] = [{ cpu: 1 }, { cpu: 1, "cpu-fast": 1 }, {
    "cpu-fast": 1,
  }];
  for (const devices of [[CPU, fast], [fast, CPU]]) {
    deepStrictEqual(partition(chain(split, devices)).switches, 1);
  }
});

Deno.test("subgraphOverhead merges runs that are free to merge", () => {
  const fast: PartitionDevice = { name: "cpu-fast", memorySpace: "host" };
  const costs = [{ cpu: 1, "cpu-fast": 2 }, { cpu: 2, "cpu-fast": 1 }];
  deepStrictEqual(partition(chain(costs, [CPU, fast])).switches, 1);
  const plan = partition({ ...chain(costs, [CPU, fast]), subgraphOverhead: 5 });
  deepStrictEqual([plan.switches, plan.cost], [0, 5 + 3]);
});

Deno.test("partition() refuses a model no allowed device can run, naming its operations", () => {
  const problem = chain([{ cpu: 1 }, { gpu: 1 }, { cpu: 1 }, {}]);
  throws(() => partition(problem), (error) => {
    ok(error instanceof UnsupportedOperations);
    deepStrictEqual(error.operations, [1, 3]);
    deepStrictEqual(error.message, "No allowed device supports operations 1, 3");
    return true;
  });
});

Deno.test("partition() refuses operations out of run order", () => {
  const problem = chain([{ cpu: 1 }, { cpu: 1 }]);
  problem.operations.reverse();
  throws(() => partition(problem), /reads operand 1 before it is written/);
});

Deno.test("pinned operations run where pinned and the rest is optimised around them", () => {
  const costs = [0, 1, 2, 3].map(() => ({ cpu: 10, npu: 1 }));
  const plan = partition(pin(chain(costs), { 3: "cpu" }));
  deepStrictEqual(plan.subgraphs.map((g) => [g.device, g.operations]), [
    ["npu", [0, 1, 2]],
    ["cpu", [3]],
  ]);
  throws(() => partition(pin(chain([{ npu: 1 }]), { 0: "cpu" })), UnsupportedOperations);
});

Deno.test("reassign() moves one subgraph, keeps the others and merges neighbours", () => {
  const costs = [0, 1, 2, 3, 4].map((i) => i === 2 ? { cpu: 0.5, npu: 100 } : { cpu: 30, npu: 1 });
  const problem = chain(costs);
  const plan = partition(problem);
  deepStrictEqual(plan.subgraphs.map((g) => g.device), ["npu", "cpu", "npu"]);
  const fallback = reassign(problem, { partition: plan, subgraph: 2, device: "cpu" });
  deepStrictEqual(fallback.subgraphs.map((g) => [g.device, g.operations]), [
    ["npu", [0, 1]],
    ["cpu", [2, 3, 4]],
  ]);
  deepStrictEqual([fallback.cost, fallback.optimal], [2 + 0.5 + 60 + 2 * 11, false]);
  const small = chain([{ cpu: 1, npu: 1 }, { npu: 1 }]);
  const onNpu = evaluateAssignment(small, { 0: "npu", 1: "npu" });
  throws(
    () => reassign(small, { partition: onNpu, subgraph: 0, device: "cpu" }),
    /^UnsupportedOperations: Device cpu does not support operations 1$/,
  );
});

/**
 * A seeded random problem: 2–3 devices, 1–10 operations, a random DAG, costs and sizes; with
 * `throughHost`, a move between two device spaces costs a move to the host plus one from it
 * and some spaces are transient (as the driver's executors make them), else each link costs
 * what it draws.
 */
function randomProblem(seed: number, throughHost = false): PartitionProblem {
  // Consecutive seeds give nearly equal first draws from an LCG: spread them, skip one.
  const stream = seededFloats(512, Math.imul(seed, 0x9e3779b1), 1);
  let drawn = 1;
  const next = () => stream[drawn++] + 0.5; // [0, 1)
  const int = (n: number) => Math.floor(next() * n);
  const spaces = ["host", "npu", "gpu"];
  // Through the host, a space's copies may also last one subgraph (as the driver's do).
  const transient = new Set(throughHost ? spaces.filter((s) => s !== "host" && next() < 0.5) : []);
  const devices = Array.from({ length: 2 + int(2) }, (_, i) => {
    const memorySpace = i === 0 ? "host" : spaces[int(3)];
    return { name: `d${i}`, memorySpace, transient: transient.has(memorySpace) };
  });
  const inputs = 1 + int(2);
  const constants = [inputs, inputs + 1];
  const readable = [...Array(inputs).keys(), ...constants];
  let operand = inputs + 2;
  const operations: PartitionOperation[] = [];
  const length = 1 + int(10);
  for (let i = 0; i < length; i++) {
    // Favour recent operands, so graphs look like models: mostly chains with some fan-out.
    const picks = Array.from(
      { length: 1 + int(3) },
      () => readable[Math.max(0, readable.length - 1 - int(Math.min(4, readable.length)))],
    );
    const outputs = Array.from({ length: next() < 0.8 ? 1 : 2 }, () => operand++);
    const costs: Record<string, number> = {};
    for (const d of devices) if (next() < 0.75) costs[d.name] = Math.round(next() * 100) / 10;
    if (Object.keys(costs).length === 0) costs[devices[int(devices.length)].name] = next() * 10;
    operations.push({ index: i, inputs: picks, outputs, costs });
    readable.push(...outputs);
  }
  const last = operations[length - 1].outputs;
  const modelOutputs = readable.filter((x) =>
    x >= inputs + 2 && (last.includes(x) || next() < 0.2)
  );
  const rates = new Map<string, number>();
  return {
    devices,
    operations,
    operandBytes: Array.from({ length: operand }, () => int(2000)),
    modelInputs: [...Array(inputs).keys()],
    modelOutputs,
    hostSpace: "host",
    transferCost(from, to, bytes) {
      const linkCost = (a: string, b: string) => {
        const link = `${a}>${b}`;
        if (!rates.has(link)) rates.set(link, 0.001 + next() * 0.01);
        return 1 + bytes * rates.get(link)!;
      };
      if (throughHost && from !== "host" && to !== "host") {
        return linkCost(from, "host") + linkCost("host", to);
      }
      return linkCost(from, to);
    },
    subgraphOverhead: next() < 0.3 ? next() * 2 : 0,
  };
}

/** Every assignment of supported devices, evaluated: the ground truth for small problems. */
function bruteForce(problem: PartitionProblem) {
  const ix = indexProblem(problem);
  const plans = [];
  const choice = ix.operations.map(() => 0);
  for (;;) {
    const devices = ix.operations.map((op, i) => op.allowed[choice[i]]);
    plans.push(evaluate(ix, devices, false));
    let i = 0;
    while (i < choice.length && ++choice[i] === ix.operations[i].allowed.length) choice[i++] = 0;
    if (i === choice.length) return plans;
  }
}

Deno.test("partition() finds the brute-force optimum (300 seeded problems, each with links of their own and through the host)", () => {
  for (let seed = 1; seed <= 600; seed++) {
    const problem = randomProblem((seed + 1) >> 1, seed % 2 === 0);
    const plans = bruteForce(problem);
    const plan = partition(problem);
    const context = `seed ${seed}`;
    ok(plan.optimal, context);
    const best = Math.min(...plans.map((p) => p.cost));
    ok(!less(plan.cost, best) && !less(best, plan.cost), `${context}: ${plan.cost} ≠ ${best}`);
    const ties = plans.filter((p) => !less(best, p.cost));
    deepStrictEqual(plan.switches, Math.min(...ties.map((p) => p.switches)), context);
    ok(!less(naivePartition(problem).cost, plan.cost), context);
  }
});

/** `branches` parallel operations reading the input, joined by one operation. */
function fanIn(branches: number): PartitionProblem {
  const operations = Array.from({ length: branches }, (_, i) => ({
    index: i,
    inputs: [0],
    outputs: [i + 1],
    costs: i % 3 === 0 ? { cpu: 1, npu: 2 } : { cpu: 3, npu: 1 },
  }));
  operations.push({
    index: branches,
    inputs: operations.map((op) => op.outputs[0]),
    outputs: [branches + 1],
    costs: { cpu: 1, npu: 1 },
  });
  return {
    devices: [CPU, NPU],
    operations,
    operandBytes: Array(branches + 2).fill(200),
    modelInputs: [0],
    modelOutputs: [branches + 1],
    hostSpace: "host",
    transferCost: linkCost,
  };
}

Deno.test("a 12-branch fan-in is searched exactly within the default state budget", () => {
  const plan = partition(fanIn(12));
  ok(plan.optimal);
  ok(!less(naivePartition(fanIn(12)).cost, plan.cost));
});

Deno.test("past maxStates the search turns into a beam and says the plan may not be optimal", () => {
  const exact = partition(fanIn(12));
  const beam = partition(fanIn(12), { maxStates: 8 });
  deepStrictEqual(beam.optimal, false);
  ok(!less(beam.cost, exact.cost));
  deepStrictEqual(beam.subgraphs.flatMap((g) => g.operations).length, 13);
});

/** A chain of `length` operations on cpu, npu and gpu, each 5–15 µs anywhere (seeded). */
function threeDeviceChain(length: number): PartitionProblem {
  const gpu: PartitionDevice = { name: "gpu", memorySpace: "gpu" };
  const stream = seededFloats(3 * length, 7, 10);
  const costs = Array.from({ length }, (_, i) => ({
    cpu: 10 + stream[3 * i],
    npu: 10 + stream[3 * i + 1],
    gpu: 10 + stream[3 * i + 2],
  }));
  return chain(costs, [CPU, NPU, gpu]);
}

Deno.test("a 2000-operation chain on three devices partitions for latency exactly", () => {
  // How fast belongs in a benchmark, not here (about 40 ms on a quiet machine).
  const problem = threeDeviceChain(2000);
  const plan = partition(problem);
  ok(plan.optimal);
  ok(less(plan.cost, naivePartition(problem).cost));
});

Deno.test("with a tiny state budget the search still returns a complete, valid plan", () => {
  for (let seed = 1; seed <= 100; seed++) {
    const problem = randomProblem(seed);
    const best = partition(problem);
    const rough = partition(problem, { maxStates: 1 });
    ok(!less(rough.cost, best.cost), `seed ${seed}`);
    const assignment = Object.fromEntries(
      rough.subgraphs.flatMap((g) => g.operations.map((op) => [op, g.device])),
    );
    const again = evaluateAssignment(problem, assignment);
    ok(!less(again.cost, rough.cost) && !less(rough.cost, again.cost), `seed ${seed}`);
  }
});

Deno.test("a memory space that cannot pay for one move is dropped before the search, and only then", () => {
  // Two chains joined at the end, each operation a little cheaper on the gpu, whose moves
  // cost 11 ms: what the gpu saves in all (0.01 per operation) never pays for a move.
  const operations: PartitionOperation[] = [];
  for (let i = 0; i < 200; i++) {
    const inputs = i < 2 ? [0] : [i - 1];
    operations.push({ index: i, inputs, outputs: [i + 1], costs: { cpu: 1, gpu: 0.99 } });
  }
  operations.push({ index: 200, inputs: [199, 200], outputs: [201], costs: { cpu: 1 } });
  const problem: PartitionProblem = {
    devices: [{ name: "cpu", memorySpace: "host" }, { name: "gpu", memorySpace: "gpu" }],
    operations,
    operandBytes: Array.from({ length: 202 }, () => 4096),
    modelInputs: [0],
    modelOutputs: [201],
    hostSpace: "host",
    transferCost: (_from, _to, bytes) => 11_000 + bytes * 0.001,
  };
  const pruned = withoutHopelessSpaces(problem);
  ok(pruned.operations.every((op) => !("gpu" in op.costs)));
  const plan = partition(problem);
  deepStrictEqual([plan.optimal, plan.subgraphs.map((g) => g.device)], [true, ["cpu"]]);
  // Where the savings outweigh a move, the gpu stays and wins.
  const paying = {
    ...problem,
    operations: operations.map((op) =>
      op.index < 200 ? { ...op, costs: { cpu: 200, gpu: 1 } } : op
    ),
  };
  ok(withoutHopelessSpaces(paying).operations.slice(0, 200).every((op) => "gpu" in op.costs));
  deepStrictEqual(partition(paying).subgraphs.map((g) => g.device), ["gpu", "cpu"]);
});
