/**
 * What the gpu device's tests share: the test process's adapter on each WebGPU implementation
 * (a missing one is a failure naming the Debian packages that provide it, never a skip), seeded
 * operands, models of several steps evaluated with the reference kernels as they are built,
 * a comparison of one step's GPU output with the reference kernel's, and a bit-for-bit one
 * for fused kernels against the steps they replace.
 */
import { seededFloats } from "../../../kernels/seeded_random.ts";
import { allocate, elementCount, type Tensor, type TensorData } from "../../../nnapi/tensor.ts";
import type { OperandType, OperationType } from "../../../nnapi/types.ts";
import type { PrepareInput } from "../../../operations/operation.ts";
import { operationDefinition } from "../../../operations/table.ts";
import {
  GPU_IMPLEMENTATIONS,
  type GpuContext,
  type GpuImplementation,
  openGpu,
} from "./context.ts";
import { type GpuOperand, type GpuStep, gpuSupportReason, prepareGpuSubgraph } from "./subgraph.ts";

/** Why a test cannot run on an implementation: said in full, since CI must have both. */
export const NO_ADAPTER: Record<GpuImplementation, string> = {
  deno: "navigator.gpu found no adapter: install Mesa's llvmpipe software rasterizer, Debian " +
    "packages libegl-mesa0 and libgl1-mesa-dri (.ci/run does)",
  dawn: "Dawn (npm webgpu) found no adapter: install the Vulkan loader and Mesa 23 or later's " +
    "lavapipe, Debian packages libvulkan1 and mesa-vulkan-drivers from bookworm-backports " +
    "(.ci/run does)",
};

const opened = new Map<GpuImplementation, Promise<GpuContext | null>>();

/**
 * The test process's context on `implementation` (opened once); throws its
 * {@link NO_ADAPTER} message without one.
 */
export async function testGpu(implementation: GpuImplementation = "deno"): Promise<GpuContext> {
  let context = opened.get(implementation);
  if (!context) {
    context = openGpu(implementation);
    opened.set(implementation, context);
  }
  const gpu = await context;
  if (!gpu) throw new Error(NO_ADAPTER[implementation]);
  return gpu;
}

/** Registers the test `name` once per WebGPU implementation, `fn` given its context. */
export function eachGpu(name: string, fn: (gpu: GpuContext) => Promise<void> | void): void {
  for (const implementation of GPU_IMPLEMENTATIONS) {
    Deno.test(`${name} (${implementation})`, async () => fn(await testGpu(implementation)));
  }
}

/** An operand of a test step and the data the reference (and, if not constant, the GPU) gets. */
export interface TestInput {
  operand: GpuOperand;
  data: TensorData;
}

function operand(type: OperandType, shape: readonly number[], value?: TensorData): GpuOperand {
  return { type, shape, scale: 0, zeroPoint: 0, ...(value ? { value } : {}) };
}

/** A float32 tensor known only at execution: seeded values in [-scale/2, scale/2). */
export function runtime(shape: readonly number[], seed: number, scale = 2): TestInput {
  return {
    operand: operand("TENSOR_FLOAT32", shape),
    data: seededFloats(count(shape), seed, scale),
  };
}

/** A constant float32 tensor of seeded values in [-scale/2, scale/2). */
export function constant(shape: readonly number[], seed: number, scale = 2): TestInput {
  const data = seededFloats(count(shape), seed, scale);
  return { operand: operand("TENSOR_FLOAT32", shape, data), data };
}

/** Weights as trained layers have them: values in [-1, 1) / sqrt(fan-in). */
export function weights(shape: readonly number[], fanIn: number, seed: number): TestInput {
  return constant(shape, seed, 2 / Math.sqrt(fanIn));
}

/** A constant scalar parameter. */
export function scalar(type: "INT32" | "FLOAT32" | "BOOL", value: number): TestInput {
  const data = allocate(type, 1);
  data[0] = value;
  return { operand: operand(type, [], data), data };
}

/** INT32 scalar parameters. */
export function ints(...values: number[]): TestInput[] {
  return values.map((v) => scalar("INT32", v));
}

/** A constant TENSOR_INT32 (RESHAPE's target shape). */
export function int32Tensor(values: readonly number[]): TestInput {
  const data = Int32Array.from(values);
  return { operand: operand("TENSOR_INT32", [values.length], data), data };
}

function count(shape: readonly number[]): number {
  return elementCount(shape);
}

/** The output shape the operation's own shape inference gives. */
export function outputShape(type: OperationType, inputs: readonly TestInput[]): number[] {
  const prepareInputs: PrepareInput[] = inputs.map((i) => ({ ...i.operand, value: i.data }));
  const output = { type: "TENSOR_FLOAT32" as const, shape: [], scale: 0, zeroPoint: 0 };
  return operationDefinition(type)!.prepare(prepareInputs, [output])[0];
}

/** Runs the reference kernel of one operation on the test inputs. */
export function reference(type: OperationType, inputs: readonly TestInput[]): Float32Array {
  const shape = outputShape(type, inputs);
  const tensors: Tensor[] = inputs.map((i) => ({ ...i.operand, data: i.data }));
  const out = new Float32Array(count(shape));
  const output: Tensor = { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0, data: out };
  operationDefinition(type)!.execute(tensors, [output]);
  return out;
}

/** A model under construction, evaluated with the reference kernels as it grows. */
export class Graph {
  readonly operands: GpuOperand[] = [];
  readonly steps: GpuStep[] = [];
  /** Reference values of every operand. */
  readonly values: TensorData[] = [];
  private readonly inputsOf: TestInput[] = [];

  add(input: TestInput): number {
    this.operands.push(input.operand);
    this.values.push(input.data);
    this.inputsOf.push(input);
    return this.operands.length - 1;
  }

  op(type: OperationType, inputs: (number | TestInput)[]): number {
    const indexes = inputs.map((i) => typeof i === "number" ? i : this.add(i));
    const tests = indexes.map((i) => this.inputsOf[i]);
    const shape = outputShape(type, tests);
    const out = this.add({
      operand: { type: "TENSOR_FLOAT32", shape, scale: 0, zeroPoint: 0 },
      data: reference(type, tests),
    });
    this.steps.push({ type, inputs: indexes, outputs: [out] });
    return out;
  }
}

/**
 * Fails unless every element is within `tolerance` absolute + `tolerance` relative of the
 * reference (1e-5 as the CPU kernel tests: float32 sums in another order), NaN matching NaN.
 */
export function assertClose(
  got: TensorData,
  want: TensorData,
  what: string,
  tolerance = 1e-5,
): void {
  if (got.length !== want.length) {
    throw new Error(`${what}: ${got.length} elements, reference has ${want.length}`);
  }
  for (let i = 0; i < want.length; i++) {
    const g = Number(got[i]), w = Number(want[i]);
    if (g === w || (Number.isNaN(w) && Number.isNaN(g))) continue;
    if (!(Math.abs(g - w) <= tolerance + tolerance * Math.abs(w))) {
      throw new Error(`${what}: element ${i} is ${g}, reference ${w}`);
    }
  }
}

/**
 * Fails unless `got` has the same float32 bits as `want` element by element (any NaN
 * matching any NaN: a GPU need not keep payloads), as fused kernels must give.
 */
export function assertSameBits(got: TensorData, want: TensorData, what: string): void {
  const a = Float32Array.from(got as Float32Array), b = Float32Array.from(want as Float32Array);
  if (a.length !== b.length) throw new Error(`${what}: ${a.length} elements, not ${b.length}`);
  const bitsA = new Uint32Array(a.buffer), bitsB = new Uint32Array(b.buffer);
  for (let i = 0; i < a.length; i++) {
    if (bitsA[i] === bitsB[i] || (Number.isNaN(a[i]) && Number.isNaN(b[i]))) continue;
    throw new Error(`${what}: element ${i} is ${a[i]}, unfused ${b[i]}`);
  }
}

/**
 * Runs one operation as a one-step subgraph on the GPU, on each implementation, and compares
 * its output with the reference kernel's; `what` names the case in a failure. `relaxed`
 * prepares it as a relaxed model's, to be compared within `tolerance`.
 */
export async function checkAgainstReference(
  type: OperationType,
  inputs: readonly TestInput[],
  what: string,
  options: { relaxed?: boolean; tolerance?: number } = {},
): Promise<void> {
  const shape = outputShape(type, inputs);
  const operands = [...inputs.map((i) => i.operand), operand("TENSOR_FLOAT32", shape)];
  const out = inputs.length;
  const step = { type, inputs: inputs.map((_, i) => i), outputs: [out] };
  const reason = gpuSupportReason(step, operands);
  if (reason) throw new Error(`${what}: not supported on the gpu: ${reason}`);
  const want = reference(type, inputs);
  for (const implementation of GPU_IMPLEMENTATIONS) {
    const gpu = await testGpu(implementation);
    const subgraph = await prepareGpuSubgraph(gpu, [step], {
      operands,
      needed: new Set([out]),
      relaxed: options.relaxed,
    });
    try {
      const data = new Map(subgraph.inputs.map((i) => [i, inputs[i].data]));
      const result = await subgraph.run(data);
      const name = `${type} ${what} (${implementation})`;
      assertClose(result.get(out)!, want, name, options.tolerance);
    } finally {
      subgraph.destroy();
    }
  }
}
