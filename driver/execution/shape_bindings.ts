/**
 * A plan bound for one signature of input shapes (XNNPACK's reshape step, ONNX Runtime's
 * per-shape kernel cache): every operand's shape, an arena laid out for them, each step's
 * kernel bound on its device for them, fused runs, and device units prepared for them. A
 * plan whose shapes are all known at preparation has one, built when an executor binds the
 * plan; extents given only at execution get one per signature, built at the first run that
 * brings it and kept in a bounded least-recently-used map per executable. Signatures whose
 * shapes depend on values known only at execution run step by step instead.
 */
import { realmHeap } from "../../kernels/wasm_heap.ts";
import { DriverError } from "../../nnapi/errors.ts";
import type { TensorData } from "../../nnapi/tensor.ts";
import type { Kernel, OperationDefinition, PrepareInput } from "../../operations/operation.ts";
import type { ArenaLayout } from "../compilation/arena_layout.ts";
import { layoutArena } from "../compilation/arena_layout.ts";
import { bindFusedRuns, type FusedPass, fusedRuns } from "../compilation/chain_fusion.ts";
import type { PreparedGraph } from "../compilation/plan.ts";
import type { StepImplementation } from "../devices/device.ts";
import { FALLBACK_DEVICE } from "../devices/device_list.ts";
import { inferShapes } from "../model/shape_inference.ts";
import { type DeviceUnit, deviceUnits, readOutside } from "./device_units.ts";

/** Bindings kept per executable; the least recently used one goes first. */
export const MAX_SHAPE_BINDINGS = 8;
/** Arena bytes the bindings of one executable may hold together (the newest always stays). */
export const MAX_SHAPE_BINDING_BYTES = 256 * 2 ** 20;

/** One step of the plan as bindings see it. */
export interface BindableStep {
  operation: number;
  device: string;
  definition: OperationDefinition;
  /** How its device runs it (undefined: a device without host kernels, or one this build lacks). */
  implementation: StepImplementation | undefined;
  /** Weights its device packed at preparation. */
  packed: readonly TensorData[];
  inputs: readonly number[];
  outputs: readonly number[];
}

/** What a binding is built from: the graph, its constants, and its steps. */
export interface BindingSource {
  graph: PreparedGraph;
  constants: readonly (TensorData | undefined)[];
  steps: readonly BindableStep[];
}

/** The plan bound for one signature of input shapes. */
export class ShapeBinding {
  /** Every operand's shape. */
  readonly shapes: readonly (readonly number[])[];
  readonly arena: ArenaLayout;
  /** Per step: its device's kernel for these shapes, or the reference kernel. */
  readonly kernels: readonly Kernel[];
  /**
   * Per step whose device has no kernel for these shapes (it runs on the reference
   * kernel): why, for `timing.steps`.
   */
  readonly fallbacks: ReadonlyMap<number, string>;
  /** Passes of fused runs, by their first step. */
  readonly fused: ReadonlyMap<number, FusedPass>;
  /** Device units by their first step, prepared for these shapes on first use. */
  readonly units: ReadonlyMap<number, DeviceUnit>;
  #bytes?: { buffer: ArrayBufferLike; offset: number };
  #released = false;

  constructor(
    source: BindingSource,
    shapes: readonly (readonly number[])[],
    planned?: { arena: ArenaLayout; runs: ReadonlyMap<number, number> },
  ) {
    const { graph, constants, steps } = source;
    this.shapes = shapes;
    const shaped = {
      operands: graph.operands.map((o, i) => ({ ...o, shape: shapes[i] })),
      inputIndexes: graph.inputIndexes,
      outputIndexes: graph.outputIndexes,
      value: (i: number) => graph.operands[i].lifetime === "NO_VALUE" ? null : constants[i],
    };
    this.units = deviceUnits(graph.steps);
    const arena = planned?.arena ??
      layoutArena(shaped, graph.steps, unitInternal(graph, this.units));
    this.arena = arena;
    const info = (i: number): PrepareInput => ({ ...shaped.operands[i], value: shaped.value(i) });
    const fallbacks = new Map<number, string>();
    this.kernels = steps.map((step, s) => {
      const { implementation } = step;
      // Operands are described only for a device with host kernels.
      const kernel = implementation?.bind(
        { inputs: step.inputs.map(info), outputs: step.outputs.map(info) },
        step.packed,
      );
      if (kernel) return kernel;
      if (implementation && step.device !== FALLBACK_DEVICE.info.name) {
        fallbacks.set(s, `${step.device} has no kernel for these shapes`);
      }
      return step.definition.execute;
    });
    this.fallbacks = fallbacks;
    const runs = planned?.runs ?? fusedRuns(shaped, graph.steps, arena);
    this.fused = bindFusedRuns(graph.steps, runs, info);
  }

  /**
   * The arena's bytes, which every run on these shapes reuses: a region of this realm's
   * kernel heap, where the SIMD kernels read and write tensors in place (an ArrayBuffer of
   * its own when the heap cannot grow). Runs of one executable never overlap: an executor
   * runs one job at a time, and inline runs are synchronous; outputs are copied out.
   */
  bytes(): { buffer: ArrayBufferLike; offset: number } {
    if (this.#bytes) return this.#bytes;
    if (this.#released) throw new DriverError("GENERAL_FAILURE", "a released shape binding ran");
    const heap = realmHeap();
    try {
      const offset = heap.allocateFor(this, this.arena.size);
      this.#bytes = { buffer: heap.buffer(), offset };
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      this.#bytes = { buffer: new ArrayBuffer(this.arena.size), offset: 0 };
    }
    return this.#bytes;
  }

  /** Whether `data` lies in this binding's arena (the next run overwrites it). */
  holds(data: TensorData): boolean {
    return this.#bytes !== undefined && data.buffer === this.#bytes.buffer;
  }

  /** Returns its arena to the heap and lets go of its device units. */
  release(): void {
    this.#released = true;
    this.#bytes = undefined;
    realmHeap().releaseFor(this);
    for (const unit of this.units.values()) {
      unit.runnable?.then((runnable) => runnable?.destroy(), () => {});
    }
  }
}

/**
 * The operands device units produce that nothing outside their unit reads: they stay on the
 * unit's device, and take arena bytes only if the unit falls back to the reference kernels
 * (then `Executable` gives them memory of their own).
 */
function unitInternal(graph: PreparedGraph, units: ReadonlyMap<number, DeviceUnit>): Set<number> {
  const internal = new Set<number>();
  for (const unit of units.values()) {
    const outside = readOutside(unit, graph);
    for (const step of graph.steps.slice(unit.start, unit.end)) {
      for (const i of step.outputs) if (!outside.has(i)) internal.add(i);
    }
  }
  return internal;
}

/**
 * Every operand's shape for these model input shapes, or undefined when some shape depends
 * on a value known only at execution, or an operation rejects them (the step-by-step run
 * then reports it as the operation's fault).
 */
export function inferRunShapes(
  source: BindingSource,
  inputShapes: readonly (readonly number[])[],
): (readonly number[])[] | undefined {
  const { graph, constants } = source;
  const computed = new Set(["TEMPORARY_VARIABLE", "MODEL_INPUT", "MODEL_OUTPUT"]);
  const known: (readonly number[] | undefined)[] = graph.operands.map((o) =>
    computed.has(o.lifetime) ? undefined : o.shape
  );
  graph.inputIndexes.forEach((operand, k) => known[operand] = inputShapes[k]);
  const operands = graph.operands.map((o, i) => ({
    ...o,
    declared: o.shape,
    value: o.lifetime === "NO_VALUE" ? null : constants[i],
  }));
  try {
    const { shapes, resolved } = inferShapes(operands, graph.steps, known);
    return resolved ? shapes.map((shape, i) => shape ?? graph.operands[i].shape) : undefined;
  } catch (error) {
    if (error instanceof DriverError) return undefined;
    throw error;
  }
}

/** The key of a signature of input shapes. */
export function signatureOf(inputShapes: readonly (readonly number[])[]): string {
  return inputShapes.map((shape) => shape.join("x")).join(";");
}

/**
 * An executable's bindings by signature, least recently used first; a signature whose
 * shapes cannot be inferred maps to "step by step". At most {@link MAX_SHAPE_BINDINGS}
 * entries and {@link MAX_SHAPE_BINDING_BYTES} of arenas; evicted bindings are released.
 */
export class ShapeBindings {
  readonly #entries = new Map<string, ShapeBinding | "step by step">();
  readonly #limits: { count: number; bytes: number };

  constructor(limits = { count: MAX_SHAPE_BINDINGS, bytes: MAX_SHAPE_BINDING_BYTES }) {
    this.#limits = limits;
  }

  /** How many signatures it keeps now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Arena bytes its bindings hold together. */
  get arenaBytes(): number {
    let bytes = 0;
    for (const entry of this.#entries.values()) {
      if (entry !== "step by step") bytes += entry.arena.size;
    }
    return bytes;
  }

  /** Whether it keeps an entry for `signature`. */
  has(signature: string): boolean {
    return this.#entries.has(signature);
  }

  /** The entry of `signature`, built by `build` when absent; it becomes the most recent. */
  get(
    signature: string,
    build: () => ShapeBinding | "step by step",
  ): ShapeBinding | "step by step" {
    let entry = this.#entries.get(signature);
    if (entry !== undefined) this.#entries.delete(signature);
    else entry = build();
    this.#entries.set(signature, entry);
    this.#evict();
    return entry;
  }

  #evict(): void {
    while (
      this.#entries.size > 1 &&
      (this.#entries.size > this.#limits.count || this.arenaBytes > this.#limits.bytes)
    ) {
      const [signature, oldest] = this.#entries.entries().next().value!;
      this.#entries.delete(signature);
      if (oldest !== "step by step") oldest.release();
    }
  }

  /** Releases every binding. */
  clear(): void {
    for (const entry of this.#entries.values()) if (entry !== "step by step") entry.release();
    this.#entries.clear();
  }
}
