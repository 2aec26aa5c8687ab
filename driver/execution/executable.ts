/**
 * Runs a prepared plan. An `Executable` binds each step to its kernel once (XNNPACK's
 * create/setup split); every `run` gets its own tensors, so concurrent runs of one
 * executable never share mutable memory. IF and WHILE steps run their referenced subgraphs
 * through `control_flow/run.ts`, each subgraph bound once by an executable of its own.
 */
import { realmHeap } from "../../kernels/wasm_heap.ts";
import { DriverError, invalid } from "../../nnapi/errors.ts";
import {
  checkDeclaredShape,
  checkTensorSize,
  type Kernel,
  OperationError,
  operationFault,
  type PrepareInput,
  ValueNotYetKnown,
} from "../../operations/operation.ts";
import { operationDefinition } from "../../operations/table.ts";
import type { OperationDefinition } from "../../operations/operation.ts";
import { CONTROL_FLOW_OPERATIONS } from "../../operations/common/control_flow.ts";
import {
  type ControlFlowContext,
  DEFAULT_RUN_LIMITS,
  runIf,
  type RunLimits,
  runWhile,
  type SubgraphRunner,
} from "./control_flow/run.ts";
import type { RunnableSubgraph, StepImplementation } from "../devices/device.ts";
import { FALLBACK_DEVICE } from "../devices/device_list.ts";
import { type DeviceUnit, deviceUnits, prepareUnit } from "./device_units.ts";
import { bindFusedRuns } from "../compilation/chain_fusion.ts";
import { StepClock } from "./step_timing.ts";
import {
  constantView,
  type PreparedGraph,
  type PreparedModel,
  type RunInput,
  type RunOutput,
  stepImplementation,
  type StepTiming,
} from "../compilation/plan.ts";
import {
  allocate,
  elementCount,
  type Tensor,
  type TensorData,
  typedView,
} from "../../nnapi/tensor.ts";

interface BoundStep {
  /**
   * On planned shapes: the pass that runs this step and the next ones of its fused run
   * (`chain_fusion.ts`) on the run's inputs, or "fused" for those next ones.
   */
  fused?: { kernel: Kernel; inputs: number[]; outputs: number[] } | "fused";
  definition: OperationDefinition;
  /** How its device runs it (undefined: a device this build lacks; the reference runs it). */
  implementation: StepImplementation | undefined;
  kernel: Kernel;
  /** Weights its operation packed at preparation. */
  packed: TensorData[];
  operation: number;
  inputs: number[];
  outputs: number[];
}

/** Options of one run. */
export interface RunOptions {
  /** Adds each plan step's time here when given. */
  timing?: StepTiming[];
  /** Time each host operation apart (profiling) instead of each plan step. */
  perOperation?: boolean;
  /** Loop timeout and deadline for WHILE loops. */
  limits?: RunLimits;
}

/** How an executable of a referenced subgraph shares its plan's other subgraphs. */
interface ReferencedGraph {
  subgraph: number;
  /** The executables of the plan's referenced subgraphs, built on first use. */
  executables: (Executable | undefined)[];
}

/** A plan bound to kernels, ready to run many times. */
export class Executable {
  readonly prepared: PreparedModel;
  /** The graph it runs: the plan's main graph, or one referenced subgraph of it. */
  readonly #graph: PreparedGraph;
  /** Set when it runs a referenced subgraph. */
  readonly #referenced: ReferencedGraph | undefined;
  readonly #executables: (Executable | undefined)[];
  readonly #steps: BoundStep[];
  readonly #constants: (TensorData | undefined)[];
  /** Device units by their first step. */
  readonly #units: ReadonlyMap<number, DeviceUnit>;
  /** Where the arena lives once the first planned run placed it. */
  #arena?: { buffer: ArrayBufferLike; offset: number };

  /**
   * Binds the plan's main graph (`referenced` is for the executable itself: it binds each
   * referenced subgraph, on first use, to an executable that runs it with inferred shapes).
   */
  constructor(prepared: PreparedModel, referenced?: ReferencedGraph) {
    this.prepared = prepared;
    this.#referenced = referenced;
    this.#executables = referenced?.executables ?? [];
    const graph = referenced ? prepared.referenced?.[referenced.subgraph] : prepared;
    if (!graph) throw new DriverError("GENERAL_FAILURE", "the plan lacks a referenced subgraph");
    this.#graph = graph;
    const planned = !referenced && prepared.arena !== undefined;
    this.#constants = graph.operands.map((o) =>
      o.constant ? constantView(prepared, o.constant) : undefined
    );
    this.#steps = graph.steps.map((step) => {
      const definition = operationDefinition(step.type);
      if (!definition) {
        throw new DriverError("GENERAL_FAILURE", `no kernel for ${step.type}`);
      }
      const info = (i: number) => ({ ...graph.operands[i], value: this.#constants[i] });
      const packed = (step.packed ?? []).map((ref) => constantView(prepared, ref));
      const implementation = stepImplementation(step);
      // The device's kernel for the planned shapes; the reference kernel otherwise.
      const selected = planned &&
        implementation?.bind(
          { inputs: step.inputs.map(info), outputs: step.outputs.map(info) },
          packed,
        );
      const bound = {
        ...step,
        definition,
        implementation,
        kernel: selected || definition.execute,
        packed,
      };
      if (!selected) this.#unpack(bound);
      return bound;
    });
    if (planned) this.#fuseChains((i) => ({ ...graph.operands[i], value: this.#constants[i] }));
    this.#units = referenced ? new Map() : deviceUnits(graph.steps);
  }

  /**
   * Rebuilds the raw values of constants the plan keeps only packed, for the reference
   * kernel (a worker without the optimized kernel, or a run on unplanned shapes).
   */
  #unpack(step: BoundStep): void {
    const { operands } = this.#graph;
    const replaced = step.inputs.filter((i) => operands[i].packedIn !== undefined);
    if (replaced.every((i) => this.#constants[i] !== undefined)) return;
    const positions = step.implementation?.packReplaces ?? [];
    const raw = step.implementation?.unpack?.(step.inputs.map((i) => operands[i]), step.packed) ??
      [];
    positions.forEach((j, k) => {
      const i = step.inputs[j];
      if (operands[i].packedIn !== undefined) this.#constants[i] = raw[k];
    });
  }

  /**
   * Whether some steps run on a device with memory of its own: then `runAsync` runs them
   * there (`run` runs them on their reference kernels).
   */
  get hasDeviceUnits(): boolean {
    return this.#units.size > 0;
  }

  /**
   * Runs the plan on the given inputs (already checked against the model), on host kernels
   * (device units' steps too, on their reference kernels); with `timing`, adds each plan
   * step's time to it.
   */
  run(inputs: readonly RunInput[], options: RunOptions = {}): RunOutput[] {
    // Without device units the loop never waits: it returns at its first step.
    const end = this.#stepLoop(inputs, options, false).next();
    if (!end.done) throw new Error("a host run waited on a device");
    return end.value;
  }

  /**
   * Runs the plan, each run of steps on a device with memory of its own as one unit there
   * (inputs uploaded, only what is needed outside downloaded). A unit that cannot be
   * prepared in this thread runs on the reference kernels instead.
   */
  async runAsync(inputs: readonly RunInput[], options: RunOptions = {}): Promise<RunOutput[]> {
    const loop = this.#stepLoop(inputs, options, true);
    let step = loop.next();
    while (!step.done) step = loop.next(await step.value);
    return step.value;
  }

  /**
   * The one step loop of `run` and `runAsync`: it yields each device operation it waits on
   * (preparing a unit, running one) and is resumed with the result; with `units` false it
   * runs every step on the host and never yields.
   */
  *#stepLoop(
    inputs: readonly RunInput[],
    options: RunOptions,
    units: boolean,
  ): Generator<Promise<unknown>, RunOutput[], unknown> {
    const { tensors, staticShapes } = this.#begin(inputs);
    const clock = new StepClock(this.#graph.steps, options.timing, options.perOperation ?? false);
    const limits = options.limits ?? DEFAULT_RUN_LIMITS;
    for (let s = 0; s < this.#steps.length;) {
      const unit = units && staticShapes ? this.#units.get(s) : undefined;
      const runnable = unit
        ? (yield (unit.runnable ??= prepareUnit(unit, this.prepared, this.#constants))) as
          | RunnableSubgraph
          | null
        : null;
      clock.start(s);
      if (unit && runnable) {
        const uploads = new Map(runnable.inputs.map((i) => [i, tensors[i]!.data!]));
        const results = (yield runnable.run(uploads)) as Awaited<
          ReturnType<RunnableSubgraph["run"]>
        >;
        for (const [i, data] of results) (tensors[i]!.data as TensorData).set(data as never);
        clock.stop(s, unit.end - s);
        s = unit.end;
        continue;
      }
      this.#runStep(this.#steps[s], tensors, { staticShapes, limits });
      clock.stop(s, 1, unit ? FALLBACK_DEVICE.info.name : undefined);
      s++;
    }
    return this.#outputs(tensors);
  }

  /**
   * The arena's bytes, which every run reuses: a region of this realm's kernel heap, where
   * the SIMD kernels read and write tensors in place (an ArrayBuffer of its own when the
   * heap cannot grow). Runs of one executable never overlap: an executor runs one job at a
   * time, and inline runs are synchronous; outputs are copied out (`#outputs`).
   */
  #arenaBytes(size: number): { buffer: ArrayBufferLike; offset: number } {
    if (this.#arena) return this.#arena;
    const heap = realmHeap();
    try {
      const offset = heap.allocateFor(this, size);
      this.#arena = { buffer: heap.buffer(), offset };
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      this.#arena = { buffer: new ArrayBuffer(size), offset: 0 };
    }
    return this.#arena;
  }

  /** Per-execution tensors: constants, inputs, and the arena for planned shapes. */
  #begin(inputs: readonly RunInput[]): { tensors: (Tensor | undefined)[]; staticShapes: boolean } {
    const { operands, inputIndexes } = this.#graph;
    const arena = this.#referenced ? undefined : this.prepared.arena;
    const staticShapes = arena !== undefined &&
      inputs.every((input, k) =>
        input.shape.every((d, j) => d === operands[inputIndexes[k]].shape[j])
      );
    if (!staticShapes) { for (const step of this.#steps) this.#unpack(step); }
    const tensors: (Tensor | undefined)[] = operands.map((o, i) =>
      this.#constants[i]
        ? { ...o, data: this.#constants[i]! }
        : o.lifetime === "NO_VALUE"
        ? { ...o, data: null }
        : undefined
    );
    inputIndexes.forEach((operandIndex, k) => {
      tensors[operandIndex] = { ...operands[operandIndex], ...inputs[k] };
    });
    if (staticShapes && arena) {
      const { buffer, offset: base } = this.#arenaBytes(arena.size);
      arena.offsets.forEach((offset, i) => {
        if (offset < 0) return;
        const operand = operands[i];
        tensors[i] = {
          ...operand,
          data: typedView(operand.type, buffer, base + offset, elementCount(operand.shape)),
        };
      });
    }
    return { tensors, staticShapes };
  }

  /** Binds the passes of the plan's fused runs (their steps stay bound one by one too). */
  #fuseChains(info: (operand: number) => PrepareInput): void {
    for (const [s, pass] of bindFusedRuns(this.#graph.steps, info)) {
      this.#steps[s].fused = pass;
      for (let k = 1; k < this.#graph.steps[s].chain!; k++) this.#steps[s + k].fused = "fused";
    }
  }

  #runStep(
    step: BoundStep,
    tensors: (Tensor | undefined)[],
    run: { staticShapes: boolean; limits: RunLimits },
  ): void {
    if (run.staticShapes && step.fused) {
      if (step.fused === "fused") return;
      const { kernel, inputs, outputs } = step.fused;
      this.#runKernel(
        step,
        kernel,
        inputs.map((i) => tensors[i]!),
        outputs.map((i) => tensors[i]!),
      );
      return;
    }
    const stepInputs = step.inputs.map((i) => tensors[i]!);
    if (CONTROL_FLOW_OPERATIONS.has(step.definition.type)) {
      this.#runControlFlow(step, stepInputs, { tensors, limits: run.limits });
      return;
    }
    if (!run.staticShapes) this.#shapeOutputs(step, stepInputs, tensors);
    const stepOutputs = step.outputs.map((i) => tensors[i]!);
    this.#runKernel(step, step.kernel, stepInputs, stepOutputs);
  }

  /** Runs a kernel of `step`, reporting an operation's fault as the step's. */
  #runKernel(step: BoundStep, kernel: Kernel, inputs: Tensor[], outputs: Tensor[]): void {
    try {
      kernel(inputs, outputs);
    } catch (error) {
      if (error instanceof OperationError) throw this.#fault(step, error.message);
      throw error;
    }
  }

  /** An operation's fault, naming the referenced subgraph it is in (if any). */
  #fault(step: BoundStep, message: string): DriverError {
    const k = this.#referenced?.subgraph;
    if (k === undefined) return operationFault(step.operation, step.definition.type, message);
    return invalid(
      `referenced subgraph ${k}: operation ${step.operation} (${step.definition.type}): ${message}`,
      { path: ["referenced", k, "operations", step.operation] },
    );
  }

  /**
   * Runs an IF or WHILE step and places its outputs: into the arena when their shapes were
   * planned (they must come out as declared), else as the tensors the subgraph produced.
   */
  #runControlFlow(
    step: BoundStep,
    inputs: readonly Tensor[],
    run: { tensors: (Tensor | undefined)[]; limits: RunLimits },
  ): void {
    const { tensors } = run;
    const type = step.definition.type;
    const within = this.#referenced ? `referenced subgraph ${this.#referenced.subgraph}: ` : "";
    const context: ControlFlowContext = {
      subgraph: (index) => this.#subgraph(index),
      limits: run.limits,
      what: `${within}operation ${step.operation} (${type})`,
    };
    try {
      const results = type === "IF"
        ? runIf(inputs, context)
        : runWhile(inputs, { ...context, outputCount: step.outputs.length });
      step.outputs.forEach((out, j) => {
        const operand = this.#graph.operands[out];
        const result = results[j];
        checkDeclaredShape(operand.shape, result.shape, `output ${j} (operand ${out})`);
        checkTensorSize(operand.type, result.shape, `output ${j} (operand ${out})`);
        const planned = tensors[out];
        if (planned?.data) (planned.data as TensorData).set(result.data as never);
        else tensors[out] = { ...operand, shape: [...result.shape], data: result.data };
      });
    } catch (error) {
      if (error instanceof OperationError) throw this.#fault(step, error.message);
      throw error;
    }
  }

  /** The runner of referenced subgraph `index`, bound on first use and shared plan-wide. */
  #subgraph(index: number): SubgraphRunner {
    const executable = this.#executables[index] ??= new Executable(this.prepared, {
      subgraph: index,
      executables: this.#executables,
    });
    return {
      outputCount: executable.#graph.outputIndexes.length,
      run: (inputs, limits) => executable.#runGraph(inputs, limits),
    };
  }

  /**
   * Runs this referenced subgraph on the tensors a control-flow operation passes it (each
   * must fit its input's declared shape), shapes inferred step by step; returns its outputs.
   */
  #runGraph(inputs: readonly Tensor[], limits: RunLimits): Tensor[] {
    const { operands, inputIndexes } = this.#graph;
    inputs.forEach((input, j) => {
      const i = inputIndexes[j];
      const declared = operands[i].shape;
      const fits = declared.length === 0 ||
        (declared.length === input.shape.length &&
          declared.every((d, x) => d === 0 || d === input.shape[x]));
      if (!fits) {
        throw new OperationError(
          `referenced subgraph ${this.#referenced?.subgraph} input ${j} (operand ${i}) is ` +
            `declared [${declared.join(",")}] but is given [${input.shape.join(",")}]`,
        );
      }
    });
    const { tensors } = this.#begin(inputs.map(({ data, shape }) => ({ data, shape: [...shape] })));
    for (const step of this.#steps) this.#runStep(step, tensors, { staticShapes: false, limits });
    return this.#graph.outputIndexes.map((i) => tensors[i]!);
  }

  /** The outputs, copied out of the arena (the next run reuses it). */
  #outputs(tensors: (Tensor | undefined)[]): RunOutput[] {
    return this.#graph.outputIndexes.map((i) => {
      const t = tensors[i]!;
      const data = t.data!;
      const inArena = this.#arena !== undefined && data.buffer === this.#arena.buffer;
      return { shape: [...t.shape], data: inArena ? data.slice() : data };
    });
  }

  /** Dynamic path: infers this step's output shapes from the actual inputs and allocates. */
  #shapeOutputs(step: BoundStep, stepInputs: Tensor[], tensors: (Tensor | undefined)[]): void {
    const { operands } = this.#graph;
    const prepareInputs: PrepareInput[] = stepInputs.map((t) => ({ ...t, value: t.data }));
    let shapes: number[][];
    try {
      shapes = step.definition.prepare(prepareInputs, step.outputs.map((i) => operands[i]));
      step.outputs.forEach((out, j) => {
        checkDeclaredShape(operands[out].shape, shapes[j], `output ${j} (operand ${out})`);
        checkTensorSize(operands[out].type, shapes[j], `output ${j} (operand ${out})`);
      });
    } catch (error) {
      if (error instanceof OperationError) throw this.#fault(step, error.message);
      if (error instanceof ValueNotYetKnown) {
        throw new DriverError("GENERAL_FAILURE", `operation ${step.operation}: value missing`);
      }
      throw error;
    }
    step.outputs.forEach((out, j) => {
      const operand = operands[out];
      tensors[out] = {
        ...operand,
        shape: shapes[j],
        data: allocate(operand.type, elementCount(shapes[j])),
      };
    });
  }
}
