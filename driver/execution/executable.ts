/**
 * Runs a prepared plan. An `Executable` binds each step to its kernel once (XNNPACK's
 * create/setup split); every `run` gets its own tensors, so concurrent runs of one
 * executable never share mutable memory. IF and WHILE steps run their referenced subgraphs
 * through `control_flow/run.ts`, each subgraph bound once by an executable of its own.
 */
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
import { CONTROL_FLOW_OPERATIONS } from "../../operations/common/control_flow.ts";
import {
  type ControlFlowContext,
  DEFAULT_RUN_LIMITS,
  runIf,
  type RunLimits,
  runWhile,
  type SubgraphRunner,
} from "./control_flow/run.ts";
import type { RunnableSubgraph } from "../devices/device.ts";
import { FALLBACK_DEVICE } from "../devices/device_list.ts";
import {
  deviceUnits,
  type PreparedUnits,
  prepareUnit,
  prepareUnits,
  storeUnitResults,
} from "./device_units.ts";
import { fittingRepresentativeShapes, stepOutputShapes } from "../model/shape_inference.ts";
import {
  type BindableStep,
  inferRunShapes,
  ShapeBinding,
  ShapeBindings,
  signatureOf,
} from "./shape_bindings.ts";
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

/** How many signatures a referenced subgraph remembers having run once. */
const MAX_SEEN_ONCE = 64;

interface BoundStep extends BindableStep {
  packed: TensorData[];
  inputs: number[];
  outputs: number[];
}

/** The tensors the runs of one binding start from, and what they were built from. */
interface RunStart {
  unpacked: number;
  bytes: { buffer: ArrayBufferLike; offset: number } | undefined;
  tensors: (Tensor | undefined)[];
}

/** Options of one run. */
export interface RunOptions {
  /** Adds each plan step's time here when given. */
  timing?: StepTiming[];
  /** Time each host operation apart (profiling) instead of each plan step. */
  perOperation?: boolean;
  /** When the run began (`performance.now()`), where the first step's time begins. */
  startedAt?: number;
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
  /** Whether some steps run on a device with memory of its own. */
  readonly #hasUnits: boolean;
  /** The binding for the plan's own shapes, when they are all known. */
  readonly #planned: ShapeBinding | undefined;
  /** Bindings for other input shapes, by signature. */
  readonly #bindings = new ShapeBindings();
  /** A referenced subgraph's signatures run once, unbound (see `#bindingFor`). */
  readonly #seenOnce = new Set<string>();
  /** The tensors runs start from, per binding (the executable itself for unbound runs). */
  readonly #starts = new WeakMap<object, RunStart>();
  /** How many times constants were unpacked: a start built before is built again. */
  #unpacked = 0;

  /**
   * Binds the plan's main graph (`referenced` is for the executable itself: it binds each
   * referenced subgraph, on first use, to an executable that runs it per set of shapes).
   */
  constructor(prepared: PreparedModel, referenced?: ReferencedGraph) {
    this.prepared = prepared;
    this.#referenced = referenced;
    this.#executables = referenced?.executables ?? [];
    const graph = referenced ? prepared.referenced?.[referenced.subgraph] : prepared;
    if (!graph) throw new DriverError("GENERAL_FAILURE", "the plan lacks a referenced subgraph");
    this.#graph = graph;
    this.#constants = graph.operands.map((o) =>
      o.constant ? constantView(prepared, o.constant) : undefined
    );
    this.#steps = graph.steps.map((step) => {
      const definition = operationDefinition(step.type);
      if (!definition) {
        throw new DriverError("GENERAL_FAILURE", `no kernel for ${step.type}`);
      }
      const packed = (step.packed ?? []).map((ref) => constantView(prepared, ref));
      return { ...step, definition, implementation: stepImplementation(step), packed };
    });
    this.#hasUnits = !referenced && deviceUnits(graph.steps).size > 0;
    if (!referenced && prepared.arena) {
      const runs = new Map<number, number>();
      graph.steps.forEach((step, s) => step.chain && runs.set(s, step.chain));
      this.#planned = this.#bind(graph.operands.map((o) => o.shape), {
        arena: prepared.arena,
        runs,
      });
    }
  }

  /**
   * Binds the steps for operands of `shapes` (see `shape_bindings.ts`); steps whose device
   * has no kernel for them get their raw constants back for the reference kernel.
   */
  #bind(
    shapes: readonly (readonly number[])[],
    planned?: ConstructorParameters<typeof ShapeBinding>[2],
  ): ShapeBinding {
    const source = { graph: this.#graph, constants: this.#constants, steps: this.#steps };
    const binding = new ShapeBinding(source, shapes, planned);
    this.#steps.forEach((step, s) => {
      if (binding.kernels[s] === step.definition.execute) this.#unpack(step);
    });
    return binding;
  }

  /**
   * The binding for these input shapes: the planned one, or one kept per signature (built
   * on first use; for a referenced subgraph, on second use); undefined runs step by step
   * (shapes that depend on values, or a subgraph's first run of a set of shapes).
   */
  #bindingFor(inputs: readonly RunInput[]): ShapeBinding | undefined {
    const { operands, inputIndexes } = this.#graph;
    const planned = this.#planned;
    const plannedShapes = (input: RunInput, k: number) =>
      input.shape.every((d, j) => d === operands[inputIndexes[k]].shape[j]);
    if (planned && inputs.every(plannedShapes)) return planned;
    const shapes = inputs.map((input) => input.shape);
    const signature = signatureOf(shapes);
    if (this.#referenced && !this.#bindings.has(signature) && !this.#seenOnce.has(signature)) {
      // A subgraph binds a set of shapes the second time it runs them: an IF branch or a
      // WHILE body of steady shapes runs bound from its second run, one whose values grow
      // each iteration (new shapes each time) stays step by step, as binding would not pay.
      if (this.#seenOnce.size >= MAX_SEEN_ONCE) this.#seenOnce.clear();
      this.#seenOnce.add(signature);
      return undefined;
    }
    const entry = this.#bindings.get(signature, () => {
      const source = { graph: this.#graph, constants: this.#constants, steps: this.#steps };
      const inferred = inferRunShapes(source, shapes);
      return inferred ? this.#bind(inferred) : "step by step";
    });
    return entry === "step by step" ? undefined : entry;
  }

  /** How many input-shape signatures it keeps bindings (or step-by-step marks) for. */
  get shapeSignatures(): number {
    return this.#bindings.size;
  }

  /** Arena bytes its bindings for other shapes than the plan's hold. */
  get shapeBindingBytes(): number {
    return this.#bindings.arenaBytes;
  }

  /** Returns its bindings' arenas to the heap (the executable is being dropped). */
  release(): void {
    this.#bindings.clear();
    this.#planned?.release();
    if (!this.#referenced) { for (const executable of this.#executables) executable?.release(); }
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
    this.#unpacked++;
  }

  /**
   * Whether some steps run on a device with memory of its own: then `runAsync` runs them
   * there (`run` runs them on their reference kernels).
   */
  get hasDeviceUnits(): boolean {
    return this.#hasUnits;
  }

  /**
   * Prepares every device unit of the plan's own shapes now (sessions, pipelines) rather than
   * at the first run; answers the units that could not be prepared, as timing entries
   * naming their operations and why (their steps then run on the reference kernels), and
   * the artifacts the others left for the compilation cache.
   */
  prepareUnits(): Promise<PreparedUnits> {
    const binding = this.#planned;
    if (!binding) return this.#prepareRepresentativeUnits();
    return prepareUnits(binding.units.values(), this.prepared, {
      constants: this.#constants,
      shapes: binding.shapes,
    });
  }

  /**
   * For a plan whose extents come at execution: its units on devices whose preparations
   * serve other shapes too (`servesOtherShapes`: onnxruntime's sessions) prepared now for
   * representative extents the model takes (`fittingRepresentativeShapes`), as a first run
   * would, so that they are ready for it. Others wait for real shapes: a gpu unit prepared at
   * representative extents would hold buffers of sizes no run may ever bring.
   * Nothing to report: no run brings these shapes unless a client sends them.
   */
  async #prepareRepresentativeUnits(): Promise<PreparedUnits> {
    const { operands, inputIndexes } = this.#graph;
    const declared = inputIndexes.map((i) => operands[i].shape);
    const binding = fittingRepresentativeShapes(
      declared,
      (shapes) => this.#bindingFor(shapes.map((shape) => ({ data: null, shape }))),
    );
    for (const unit of binding?.units.values() ?? []) {
      if (!unit.runtime.servesOtherShapes) continue;
      await (unit.runnable ??= prepareUnit(unit, this.prepared, {
        constants: this.#constants,
        shapes: binding!.shapes,
      }));
    }
    return { failed: [], artifacts: [] };
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
    const { tensors, binding } = this.#begin(inputs);
    const clock = new StepClock(this.#graph.steps, options);
    const limits = options.limits ?? DEFAULT_RUN_LIMITS;
    for (let s = 0; s < this.#steps.length;) {
      const unit = units ? binding?.units.get(s) : undefined;
      const runnable = unit
        ? (yield (unit.runnable ??= prepareUnit(unit, this.prepared, {
          constants: this.#constants,
          shapes: binding!.shapes,
          planned: binding === this.#planned,
        }))) as RunnableSubgraph | null
        : null;
      if (unit) clock.restart();
      if (unit && runnable) {
        const uploads = new Map(runnable.inputs.map((i) => [i, tensors[i]!.data!]));
        const results = (yield runnable.run(uploads)) as Awaited<
          ReturnType<RunnableSubgraph["run"]>
        >;
        storeUnitResults(unit, results, tensors);
        clock.stop(s, unit.end - s);
        s = unit.end;
        continue;
      }
      const pass = binding?.fused.get(s);
      if (pass) {
        const inputs = pass.inputs.map((i) => tensors[i]!);
        this.#runKernel(this.#steps[s], pass.kernel, inputs, pass.outputs.map((i) => tensors[i]!));
        clock.stop(s, pass.steps);
        s += pass.steps;
        continue;
      }
      this.#runStep(s, tensors, { binding, limits });
      const reason = unit
        ? `${unit.device} could not prepare these shapes`
        : binding?.fallbacks.get(s);
      clock.stop(s, 1, reason ? { device: FALLBACK_DEVICE.info.name, reason } : undefined);
      s++;
    }
    return this.#outputs(tensors, binding);
  }

  /** Per-execution tensors: constants, inputs, and the arena of the run's shape binding. */
  #begin(inputs: readonly RunInput[]): {
    tensors: (Tensor | undefined)[];
    binding: ShapeBinding | undefined;
  } {
    const { operands, inputIndexes } = this.#graph;
    const binding = this.#bindingFor(inputs);
    if (!binding) { for (const step of this.#steps) this.#unpack(step); }
    const tensors = this.#startOf(binding).slice();
    const offsets = binding?.arena.offsets;
    for (let k = 0; k < inputIndexes.length; k++) {
      const i = inputIndexes[k];
      if (offsets === undefined || offsets[i] < 0) tensors[i] = { ...operands[i], ...inputs[k] };
    }
    return { tensors, binding };
  }

  /**
   * The tensors every run of `binding` (or every unbound run) starts from: the constants, the
   * omitted operands, and views of the binding's arena. Built once and copied per run (a
   * view costs about half a microsecond to make, and a model has hundreds); built again when
   * a step's constants were unpacked since. Tensors are never changed in place: a run puts
   * new ones in its own copy of the array.
   */
  #startOf(binding: ShapeBinding | undefined): (Tensor | undefined)[] {
    const key = binding ?? this;
    // Asked each run: a released binding throws, and an arena placed anew gets new views.
    const bytes = binding?.bytes();
    const kept = this.#starts.get(key);
    if (kept && kept.unpacked === this.#unpacked && kept.bytes === bytes) return kept.tensors;
    const { operands } = this.#graph;
    const tensors: (Tensor | undefined)[] = operands.map((o, i) =>
      this.#constants[i]
        ? { ...o, data: this.#constants[i]! }
        : o.lifetime === "NO_VALUE"
        ? { ...o, data: null }
        : undefined
    );
    if (binding && bytes) {
      const { buffer, offset: base } = bytes;
      binding.arena.offsets.forEach((offset, i) => {
        if (offset < 0) return;
        const shape = binding.shapes[i];
        tensors[i] = {
          ...operands[i],
          shape,
          data: typedView(operands[i].type, buffer, base + offset, elementCount(shape)),
        };
      });
    }
    this.#starts.set(key, { unpacked: this.#unpacked, bytes, tensors });
    return tensors;
  }

  #runStep(
    s: number,
    tensors: (Tensor | undefined)[],
    run: { binding: ShapeBinding | undefined; limits: RunLimits },
  ): void {
    const step = this.#steps[s];
    const stepInputs = step.inputs.map((i) => tensors[i]!);
    if (CONTROL_FLOW_OPERATIONS.has(step.definition.type)) {
      this.#runControlFlow(step, stepInputs, { tensors, limits: run.limits });
      return;
    }
    if (!run.binding) this.#shapeOutputs(step, stepInputs, tensors);
    else this.#ownOutputs(step, run.binding, tensors);
    const stepOutputs = step.outputs.map((i) => tensors[i]!);
    const kernel = run.binding?.kernels[s] ?? step.definition.execute;
    this.#runKernel(step, kernel, stepInputs, stepOutputs);
  }

  /**
   * Memory of their own for the outputs of a step the binding left out of its arena: a
   * device unit's own operands, when its steps run here instead (the unit fell back).
   */
  #ownOutputs(step: BoundStep, binding: ShapeBinding, tensors: (Tensor | undefined)[]): void {
    for (const i of step.outputs) {
      if (tensors[i]) continue;
      const operand = this.#graph.operands[i];
      const shape = binding.shapes[i];
      tensors[i] = { ...operand, shape, data: allocate(operand.type, elementCount(shape)) };
    }
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
   * must fit its input's declared shape), bound per set of shapes as the main graph is (from
   * the second run of one); returns its outputs.
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
    const outputs = this.run(inputs.map(({ data, shape }) => ({ data, shape: [...shape] })), {
      limits,
    });
    return outputs.map((output, j) => ({
      ...operands[this.#graph.outputIndexes[j]],
      shape: output.shape,
      data: output.data,
    }));
  }

  /** The outputs, copied out of the arena (the next run reuses it). */
  #outputs(tensors: (Tensor | undefined)[], binding: ShapeBinding | undefined): RunOutput[] {
    return this.#graph.outputIndexes.map((i) => {
      const t = tensors[i]!;
      const data = t.data!;
      const inArena = binding?.holds(data) ?? false;
      return { shape: [...t.shape], data: inArena ? data.slice() : data };
    });
  }

  /** Dynamic path: infers this step's output shapes from the actual inputs and allocates. */
  #shapeOutputs(step: BoundStep, stepInputs: Tensor[], tensors: (Tensor | undefined)[]): void {
    const { operands } = this.#graph;
    const prepareInputs: PrepareInput[] = stepInputs.map((t) => ({ ...t, value: t.data }));
    let shapes: number[][];
    try {
      shapes = stepOutputShapes(step.definition, prepareInputs, {
        outputs: step.outputs.map((i) => operands[i]),
        indexes: step.outputs,
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
