/**
 * ONNX graphs built to exhaust an importer, and the means to watch a service process while
 * it refuses them: tiny files that fold into huge tensors, graphs of many nodes, conversions
 * that take minutes of CPU; the peak resident memory and the CPU time of a process.
 */
import type { GraphSpec, NodeSpec } from "../../tools/onnx_graphs.ts";

const x = { name: "x", dims: [1, 4] };
const y = { name: "y", dims: [1, 4] };

/** `y = Relu(x)`, plus `nodes` whose results nothing reads, with their initializers. */
function besideRelu(nodes: NodeSpec[], initializers: GraphSpec["initializers"] = []): GraphSpec {
  return {
    inputs: [x],
    outputs: [y],
    nodes: [...nodes, { op: "Relu", inputs: ["x"], outputs: ["y"] }],
    initializers,
  };
}

/** An int64 initializer of one value. */
function int64(name: string, value: number, dims: number[] = []) {
  return { name, dims, values: [value], int64: true };
}

/** A ConstantOfShape of `extent` zeros (float32) whose result nothing reads: a few bytes. */
export function constantOfShapeBomb(extent: number, copies = 1): GraphSpec {
  const nodes = Array.from({ length: copies }, (_, i) => ({
    op: "ConstantOfShape",
    inputs: ["shape"],
    outputs: [`bomb${i}`],
    name: `bomb${i}`,
  }));
  return besideRelu(nodes, [int64("shape", extent, [1])]);
}

/** A Range 0..`limit` (int64) whose result nothing reads. */
export function rangeBomb(limit: number): GraphSpec {
  return besideRelu(
    [{ op: "Range", inputs: ["start", "limit", "delta"], outputs: ["bomb"], name: "range" }],
    [int64("start", 0), int64("limit", limit), int64("delta", 1)],
  );
}

/** `count` Constant nodes whose values nothing reads: nodes that convert into nothing. */
export function unusedConstants(count: number): GraphSpec {
  return besideRelu(Array.from({ length: count }, (_, i) => ({
    op: "Constant",
    inputs: [],
    outputs: [`c${i}`],
    attributes: { value_float: { float: i } },
  })));
}

/** `count` initializers nothing reads. */
export function unusedInitializers(count: number): GraphSpec {
  return besideRelu(
    [],
    Array.from({ length: count }, (_, i) => ({ name: `w${i}`, dims: [1], values: [i] })),
  );
}

/**
 * One GRU over a sequence of `steps` (hidden size 4), which the converter unrolls into about
 * 13 operations a step: a few hundred bytes that ask for millions of operations.
 */
export function longGru(steps: number): GraphSpec {
  return {
    inputs: [{ name: "x", dims: [steps, 1, 2] }],
    outputs: [{ name: "y", dims: [steps, 1, 1, 4] }],
    nodes: [{ op: "GRU", inputs: ["x", "w", "r"], outputs: ["y"], attributes: { hidden_size: 4 } }],
    initializers: [
      { name: "w", dims: [1, 12, 2], values: new Array(24).fill(0.1) },
      { name: "r", dims: [1, 12, 4], values: new Array(48).fill(0.1) },
    ],
  };
}

/**
 * A chain of `length` element-wise nodes on x: Add of a constant, then Relu (which fuses into
 * the Add), alternately.
 */
export function elementwiseChain(length: number): GraphSpec {
  const nodes: NodeSpec[] = [];
  let last = "x";
  for (let i = 0; i < length; i++) {
    const out = i === length - 1 ? "y" : `v${i}`;
    nodes.push(
      i % 2 === 0
        ? { op: "Add", inputs: [last, "one"], outputs: [out] }
        : { op: "Relu", inputs: [last], outputs: [out] },
    );
    last = out;
  }
  return {
    inputs: [x],
    outputs: [y],
    nodes,
    initializers: [{ name: "one", dims: [1], values: [1] }],
  };
}

/**
 * `folds` MatMuls of [size, size] constants, each on the last one's result, all folded at
 * conversion: about 0.3 s of CPU each at 512 (a core for `folds` x 0.3 s), from a file of
 * one initializer.
 */
export function slowMatMulChain(folds: number, size = 512): GraphSpec {
  const nodes: NodeSpec[] = [];
  let last = "w";
  for (let i = 0; i < folds; i++) {
    nodes.push({ op: "MatMul", inputs: [last, "w"], outputs: [`m${i}`] });
    last = `m${i}`;
  }
  nodes.push({ op: "Add", inputs: ["x", last], outputs: ["y"] });
  const square = { dims: [size, size] };
  return {
    inputs: [{ name: "x", ...square }],
    outputs: [{ name: "y", ...square }],
    nodes,
    initializers: [{ name: "w", ...square, values: new Float32Array(size * size).fill(1e-3) }],
  };
}

/**
 * Two MatMuls of a 2048 x 2048 ConstantOfShape, folded at conversion: about 40 s of one core
 * here, from a file of under 200 bytes.
 */
export function tinySlowFold(): GraphSpec {
  const square = { dims: [2048, 2048] };
  return {
    inputs: [{ name: "x", ...square }],
    outputs: [{ name: "y", ...square }],
    nodes: [
      { op: "ConstantOfShape", inputs: ["s"], outputs: ["w"], name: "c" },
      { op: "MatMul", inputs: ["w", "w"], outputs: ["m0"], name: "m0" },
      { op: "MatMul", inputs: ["m0", "w"], outputs: ["m1"], name: "m1" },
      { op: "Add", inputs: ["x", "m1"], outputs: ["y"], name: "a" },
    ],
    initializers: [{ name: "s", dims: [2], values: [2048, 2048], int64: true }],
  };
}

/** A process's peak resident memory so far (VmHWM), in bytes. */
export async function peakRss(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  if (!kib) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(kib[1]) * 1024;
}

/** The CPU time (user and system, every thread) a process has used so far, in seconds. */
export async function cpuSeconds(pid: number | "self"): Promise<number> {
  const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
  // Fields after the command (which may hold spaces) in parentheses: utime is the 14th field.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100; // USER_HZ is 100 on Linux
}

/** The CPU seconds a process uses over the next `ms` milliseconds. */
export async function cpuOver(pid: number | "self", ms: number): Promise<number> {
  const before = await cpuSeconds(pid);
  await new Promise((resolve) => setTimeout(resolve, ms));
  return await cpuSeconds(pid) - before;
}
