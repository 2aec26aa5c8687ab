/**
 * A graph of a plan bound to kernels for each set of input shapes it runs (see
 * `shape_bindings.ts`), and the tensors each run of a binding starts from: what an
 * `Executable` runs its steps on.
 */
import { DriverError } from "../../nnapi/errors.ts";
import { operationDefinition } from "../../operations/table.ts";
import {
  type BindableStep,
  inferRunShapes,
  ShapeBinding,
  ShapeBindings,
  signatureOf,
} from "./shape_bindings.ts";
import {
  constantView,
  type PreparedGraph,
  type PreparedModel,
  type RunInput,
  stepImplementation,
} from "../compilation/plan.ts";
import { elementCount, type Tensor, type TensorData, typedView } from "../../nnapi/tensor.ts";

/** How many signatures a referenced subgraph remembers having run once. */
const MAX_SEEN_ONCE = 64;

/** A plan step with its operation's definition, implementation and packed constants. */
export interface BoundStep extends BindableStep {
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

/** A graph's steps bound per set of input shapes, and the tensors its runs start from. */
export class BoundGraph {
  readonly steps: BoundStep[];
  readonly constants: (TensorData | undefined)[];
  /** The binding for the plan's own shapes, when they are all known. */
  readonly planned: ShapeBinding | undefined;
  /** Bindings for other input shapes, by signature. */
  readonly #bindings = new ShapeBindings();
  /** Whether a set of shapes is bound only at its second run (a referenced subgraph). */
  readonly #bindsOnSecondRun: boolean;
  /** Signatures run once, unbound (see `bindingFor`). */
  readonly #seenOnce = new Set<string>();
  /** The tensors runs start from, per binding (the graph itself for unbound runs). */
  readonly #starts = new WeakMap<object, RunStart>();
  /** How many times constants were unpacked: a start built before is built again. */
  #unpacked = 0;

  /**
   * Binds `graph` of `prepared`: the plan's main graph (bound for its own shapes now, in the
   * plan's arena), or one of its referenced subgraphs (`referenced`: bound per set of shapes
   * from the second run of one).
   */
  constructor(
    prepared: PreparedModel,
    readonly graph: PreparedGraph,
    referenced: boolean,
  ) {
    this.#bindsOnSecondRun = referenced;
    this.constants = graph.operands.map((o) =>
      o.constant ? constantView(prepared, o.constant) : undefined
    );
    this.steps = graph.steps.map((step) => {
      const definition = operationDefinition(step.type);
      if (!definition) {
        throw new DriverError("GENERAL_FAILURE", `no kernel for ${step.type}`);
      }
      const packed = (step.packed ?? []).map((ref) => constantView(prepared, ref));
      return { ...step, definition, implementation: stepImplementation(step), packed };
    });
    if (!referenced && prepared.arena) {
      const runs = new Map<number, number>();
      graph.steps.forEach((step, s) => step.chain && runs.set(s, step.chain));
      this.planned = this.#bind(graph.operands.map((o) => o.shape), {
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
    const binding = new ShapeBinding(this, shapes, planned);
    this.steps.forEach((step, s) => {
      if (binding.kernels[s] === step.definition.execute) this.#unpack(step);
    });
    return binding;
  }

  /**
   * The binding for these input shapes: the planned one, or one kept per signature (built
   * on first use; for a referenced subgraph, on second use); undefined runs step by step
   * (shapes that depend on values, or a subgraph's first run of a set of shapes).
   */
  bindingFor(inputs: readonly RunInput[]): ShapeBinding | undefined {
    const { operands, inputIndexes } = this.graph;
    const planned = this.planned;
    const plannedShapes = (input: RunInput, k: number) =>
      input.shape.every((d, j) => d === operands[inputIndexes[k]].shape[j]);
    if (planned && inputs.every(plannedShapes)) return planned;
    const shapes = inputs.map((input) => input.shape);
    const signature = signatureOf(shapes);
    if (
      this.#bindsOnSecondRun && !this.#bindings.has(signature) && !this.#seenOnce.has(signature)
    ) {
      // A subgraph binds a set of shapes the second time it runs them: an IF branch or a
      // WHILE body of steady shapes runs bound from its second run, one whose values grow
      // each iteration (new shapes each time) stays step by step, as binding would not pay.
      if (this.#seenOnce.size >= MAX_SEEN_ONCE) this.#seenOnce.clear();
      this.#seenOnce.add(signature);
      return undefined;
    }
    const entry = this.#bindings.get(signature, () => {
      const inferred = inferRunShapes(this, shapes);
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
    this.planned?.release();
  }

  /**
   * Rebuilds the raw values of constants the plan keeps only packed, for the reference
   * kernel (a worker without the optimized kernel, or a run on unplanned shapes).
   */
  #unpack(step: BoundStep): void {
    const { operands } = this.graph;
    const replaced = step.inputs.filter((i) => operands[i].packedIn !== undefined);
    if (replaced.every((i) => this.constants[i] !== undefined)) return;
    const positions = step.implementation?.packReplaces ?? [];
    const raw = step.implementation?.unpack?.(step.inputs.map((i) => operands[i]), step.packed) ??
      [];
    positions.forEach((j, k) => {
      const i = step.inputs[j];
      if (operands[i].packedIn !== undefined) this.constants[i] = raw[k];
    });
    this.#unpacked++;
  }

  /** Per-execution tensors: constants, inputs, and the arena of the run's shape binding. */
  begin(inputs: readonly RunInput[]): {
    tensors: (Tensor | undefined)[];
    binding: ShapeBinding | undefined;
  } {
    const { operands, inputIndexes } = this.graph;
    const binding = this.bindingFor(inputs);
    if (!binding) { for (const step of this.steps) this.#unpack(step); }
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
    const { operands } = this.graph;
    const tensors: (Tensor | undefined)[] = operands.map((o, i) =>
      this.constants[i]
        ? { ...o, data: this.constants[i]! }
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
}
