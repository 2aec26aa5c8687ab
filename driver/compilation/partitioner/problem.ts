/**
 * What the partitioner is given and what it answers, plus the checks and indexes the search
 * and the evaluator share. Pure data: no kernels, devices or HTTP; the driver fills it in.
 */

/** Where a device keeps tensors: devices sharing a memory space exchange tensors for free. */
export interface PartitionDevice {
  name: string;
  memorySpace: string;
  /**
   * Whether its copies last one subgraph (a device that runs each subgraph as a unit of
   * its own: every subgraph takes what it reads anew, and hands back to the host what later
   * operations read when it ends). Devices sharing a space agree on it.
   */
  transient?: boolean;
}

/** One operation of the model, as the partitioner sees it. */
export interface PartitionOperation {
  /** The model's operation index: what results and errors name. */
  index: number;
  /** Operand indexes. */
  inputs: number[];
  outputs: number[];
  /**
   * Estimated cost on each device that supports it: µs (estimates, or measured times for
   * profile-guided partitioning). A device absent here cannot run it; names of devices not in
   * the problem are ignored (devices not allowed).
   */
  costs: Record<string, number>;
}

/**
 * A model to split across devices. Operands that no operation writes and that are not model
 * inputs are constants (and omitted optional operands): uploaded to every device at
 * preparation, so reading them never costs a transfer.
 */
export interface PartitionProblem {
  /** In preference order: between equally cheap plans the earlier device wins. */
  devices: PartitionDevice[];
  /** In a valid run order (each operand written before it is read). */
  operations: PartitionOperation[];
  /** Byte size of each operand (an estimate where shapes are dynamic). */
  operandBytes: number[];
  /** Model inputs start in `hostSpace`; model outputs must end there. */
  modelInputs: number[];
  modelOutputs: number[];
  hostSpace: string;
  /** Cost of moving `bytes` between two memory spaces (never asked for equal spaces). */
  transferCost(from: string, to: string, bytes: number): number;
  /** Fixed cost of each subgraph (dispatch, synchronisation); default 0. */
  subgraphOverhead?: number;
}

/** One operand moved between memory spaces, charged to the subgraph that needs it there. */
export interface Transfer {
  operand: number;
  from: string;
  to: string;
  bytes: number;
  cost: number;
}

/** A maximal run of consecutive operations (in run order) on one device: one plan step. */
export interface Subgraph {
  device: string;
  /** Model operation indexes, in run order. */
  operations: number[];
  /** Non-constant operands it reads that another subgraph or the caller provides. */
  inputs: number[];
  /** Operands it writes that a later subgraph reads or that are model outputs. */
  outputs: number[];
  /** Moves into its memory space, and model outputs it returns to the host space. */
  transfers: Transfer[];
  /** Sum of its operations' costs (plus the subgraph overhead). */
  compute: number;
  /** `compute` plus its transfers' costs. */
  cost: number;
}

/** The plan: subgraphs in run order and what they cost. */
export interface Partition {
  subgraphs: Subgraph[];
  /** Sum of all subgraph costs: one execution, run step after step (its latency). */
  cost: number;
  /** Device changes along the run order (subgraphs − 1). */
  switches: number;
  /**
   * True when an exhaustive search chose it: no cheaper plan exists (within any pins). False
   * for a beam search past `maxStates`, and for plans given rather than searched (naive,
   * reassigned, evaluated assignments).
   */
  optimal: boolean;
}

/** Some operations have no device that can run them; names them (model indexes). */
export class UnsupportedOperations extends Error {
  readonly operations: number[];

  constructor(operations: number[], message?: string) {
    super(
      message ??
        `No allowed device supports operation${operations.length === 1 ? "" : "s"} ${
          operations.join(", ")
        }`,
    );
    this.name = "UnsupportedOperations";
    this.operations = operations;
  }
}

/** An operation with everything the search needs precomputed. */
export interface IndexedOperation {
  index: number;
  /** Distinct non-constant operands read. */
  inputs: number[];
  outputs: number[];
  /** Cost per device position; undefined where unsupported. */
  costs: (number | undefined)[];
  /** Device positions that may run it, in preference order. */
  allowed: number[];
}

/** The problem checked and indexed by position. */
export interface IndexedProblem {
  problem: PartitionProblem;
  /** Memory-space position of each device. */
  spaceOf: number[];
  spaces: string[];
  /** Per space position: whether its copies last one subgraph. */
  transient: boolean[];
  host: number;
  operations: IndexedOperation[];
  /** Position of each operand's last reader (absent: never read). */
  lastRead: Map<number, number>;
  modelOutputs: Set<number>;
  overhead: number;
  /** Transfer cost of an operand between two space positions (memoised). */
  transfer(operand: number, from: number, to: number): number;
}

function checkCost(value: number, what: string): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`${what} is ${value}, expected a finite non-negative number`);
  }
  return value;
}

/**
 * Checks the problem and indexes it. Throws `UnsupportedOperations` naming every operation
 * no device supports, and a plain Error for a malformed problem (a caller bug, not a
 * client's).
 */
export function indexProblem(problem: PartitionProblem): IndexedProblem {
  const names = problem.devices.map((d) => d.name);
  if (names.length === 0) throw new Error("Cannot partition: no devices");
  const position = new Map(names.map((n, i) => [n, i]));
  if (position.size !== names.length) throw new Error("Cannot partition: duplicate device name");
  const spaces = [...new Set([problem.hostSpace, ...problem.devices.map((d) => d.memorySpace)])];
  if (spaces.length > 30) throw new Error("Cannot partition: more than 30 memory spaces");
  const spaceOf = problem.devices.map((d) => spaces.indexOf(d.memorySpace));

  const writer = new Map<number, number>();
  problem.operations.forEach((op, i) => {
    for (const x of op.outputs) {
      if (writer.has(x)) throw new Error(`Cannot partition: operand ${x} is written twice`);
      writer.set(x, i);
    }
  });
  const modelInputs = new Set(problem.modelInputs);
  const seen = new Set<number>();
  const lastRead = new Map<number, number>();
  const unsupported: number[] = [];
  const operations = problem.operations.map((op, i): IndexedOperation => {
    if (seen.has(op.index)) throw new Error(`Cannot partition: operation ${op.index} twice`);
    seen.add(op.index);
    const inputs: number[] = [];
    for (const x of new Set(op.inputs)) {
      const w = writer.get(x);
      if (w !== undefined && w >= i) {
        throw new Error(
          `Cannot partition: operation ${op.index} reads operand ${x} before it is written`,
        );
      }
      if (w === undefined && !modelInputs.has(x)) continue; // a constant
      inputs.push(x);
      lastRead.set(x, i);
    }
    const costs = names.map((n) => {
      const c = Object.hasOwn(op.costs, n) ? op.costs[n] : undefined;
      return c === undefined ? undefined : checkCost(c, `cost of operation ${op.index} on ${n}`);
    });
    const allowed = costs.flatMap((c, d) => c === undefined ? [] : [d]);
    if (allowed.length === 0) unsupported.push(op.index);
    return { index: op.index, inputs, outputs: [...op.outputs], costs, allowed };
  });
  if (unsupported.length > 0) throw new UnsupportedOperations(unsupported);
  for (const x of [...writer.keys(), ...modelInputs]) {
    const bytes = problem.operandBytes[x];
    if (bytes === undefined) throw new Error(`Cannot partition: no byte size for operand ${x}`);
    checkCost(bytes, `byte size of operand ${x}`);
  }

  const memo = new Map<number, number>();
  const m = spaces.length;
  const transient = spaces.map((space) =>
    problem.devices.some((d) => d.memorySpace === space && d.transient === true)
  );
  return {
    problem,
    spaceOf,
    spaces,
    transient,
    host: 0,
    operations,
    lastRead,
    modelOutputs: new Set(problem.modelOutputs),
    overhead: checkCost(problem.subgraphOverhead ?? 0, "subgraph overhead"),
    transfer(operand, from, to) {
      const key = (operand * m + from) * m + to;
      let cost = memo.get(key);
      if (cost === undefined) {
        const bytes = problem.operandBytes[operand];
        cost = checkCost(
          problem.transferCost(spaces[from], spaces[to], bytes),
          `transfer cost of ${bytes} bytes from ${spaces[from]} to ${spaces[to]}`,
        );
        memo.set(key, cost);
      }
      return cost;
    },
  };
}

/** a < b beyond rounding: sums taken in different orders must still tie. */
export function less(a: number, b: number): boolean {
  return a < b - 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}
