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
import type { ShapeBinding } from "./shape_bindings.ts";
import { BoundGraph, type BoundStep } from "./bound_graph.ts";
import { StepClock } from "./step_timing.ts";
import type { PreparedModel, RunInput, RunOutput, StepTiming } from "../compilation/plan.ts";
import { allocate, elementCount, type Tensor, type TensorData } from "../../nnapi/tensor.ts";

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
  /** Set when it runs a referenced subgraph. */
  readonly #referenced: ReferencedGraph | undefined;
  readonly #executables: (Executable | undefined)[];
  /** The graph it runs (the plan's main graph, or one referenced subgraph), bound. */
  readonly #bound: BoundGraph;
  /** Whether some steps run on a device with memory of its own. */
  readonly #hasUnits: boolean;

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
    this.#bound = new BoundGraph(prepared, graph, referenced !== undefined);
    this.#hasUnits = !referenced && deviceUnits(graph.steps).size > 0;
  }

  /** How many input-shape signatures it keeps bindings (or step-by-step marks) for. */
  get shapeSignatures(): number {
    return this.#bound.shapeSignatures;
  }

  /** Arena bytes its bindings for other shapes than the plan's hold. */
  get shapeBindingBytes(): number {
    return this.#bound.shapeBindingBytes;
  }

  /** Returns its bindings' arenas to the heap (the executable is being dropped). */
  release(): void {
    this.#bound.release();
    if (!this.#referenced) { for (const executable of this.#executables) executable?.release(); }
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
    const binding = this.#bound.planned;
    if (!binding) return this.#prepareRepresentativeUnits();
    return prepareUnits(binding.units.values(), this.prepared, {
      constants: this.#bound.constants,
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
    const { operands, inputIndexes } = this.#bound.graph;
    const declared = inputIndexes.map((i) => operands[i].shape);
    const binding = fittingRepresentativeShapes(
      declared,
      (shapes) => this.#bound.bindingFor(shapes.map((shape) => ({ data: null, shape }))),
    );
    for (const unit of binding?.units.values() ?? []) {
      if (!unit.runtime.servesOtherShapes) continue;
      await (unit.runnable ??= prepareUnit(unit, this.prepared, {
        constants: this.#bound.constants,
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
    const { tensors, binding } = this.#bound.begin(inputs);
    const clock = new StepClock(this.#bound.graph.steps, options);
    const limits = options.limits ?? DEFAULT_RUN_LIMITS;
    for (let s = 0; s < this.#bound.steps.length;) {
      const unit = units ? binding?.units.get(s) : undefined;
      const runnable = unit
        ? (yield (unit.runnable ??= prepareUnit(unit, this.prepared, {
          constants: this.#bound.constants,
          shapes: binding!.shapes,
          planned: binding === this.#bound.planned,
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
        this.#runKernel(
          this.#bound.steps[s],
          pass.kernel,
          inputs,
          pass.outputs.map((i) => tensors[i]!),
        );
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

  #runStep(
    s: number,
    tensors: (Tensor | undefined)[],
    run: { binding: ShapeBinding | undefined; limits: RunLimits },
  ): void {
    const step = this.#bound.steps[s];
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
      const operand = this.#bound.graph.operands[i];
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
        const operand = this.#bound.graph.operands[out];
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
      outputCount: executable.#bound.graph.outputIndexes.length,
      run: (inputs, limits) => executable.#runGraph(inputs, limits),
    };
  }

  /**
   * Runs this referenced subgraph on the tensors a control-flow operation passes it (each
   * must fit its input's declared shape), bound per set of shapes as the main graph is (from
   * the second run of one); returns its outputs.
   */
  #runGraph(inputs: readonly Tensor[], limits: RunLimits): Tensor[] {
    const { operands, inputIndexes } = this.#bound.graph;
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
      ...operands[this.#bound.graph.outputIndexes[j]],
      shape: output.shape,
      data: output.data,
    }));
  }

  /** The outputs, copied out of the arena (the next run reuses it). */
  #outputs(tensors: (Tensor | undefined)[], binding: ShapeBinding | undefined): RunOutput[] {
    return this.#bound.graph.outputIndexes.map((i) => {
      const t = tensors[i]!;
      const data = t.data!;
      const inArena = binding?.holds(data) ?? false;
      return { shape: [...t.shape], data: inArena ? data.slice() : data };
    });
  }

  /** Dynamic path: infers this step's output shapes from the actual inputs and allocates. */
  #shapeOutputs(step: BoundStep, stepInputs: Tensor[], tensors: (Tensor | undefined)[]): void {
    const { operands } = this.#bound.graph;
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
