/**
 * Editing a converted model's main graph between conversion and registration: who writes
 * and who reads each operand, constants by value, new operands and operations, and a final
 * compaction that drops operands nothing refers to any more. The optimization passes
 * (`fuse_activations.ts`, `nhwc_layout.ts`) are written against it, not against a front end.
 */
import type { ModelJson, OperandJson, OperationJson } from "../../driver/model/model_schema.ts";
import type { OperationType } from "../../nnapi/types.ts";

/** The operand of an INT32 scalar constant, as the model JSON writes it. */
export function int32ScalarOperand(value: number): OperandJson {
  return {
    type: "INT32",
    dimensions: [],
    scale: 0,
    zeroPoint: 0,
    lifetime: "CONSTANT_COPY",
    value: [value],
  };
}

/** An operation of the graph with its index in run order. */
export interface IndexedOperation {
  index: number;
  operation: OperationJson;
}

/**
 * A mutable view of a model's main graph (referenced subgraphs are kept as they are). Who
 * reads and who writes each operand is indexed, so the passes' lookups cost the operand's
 * readers, not a scan of every operation (a scan per lookup made a pass quadratic in the
 * operation count). Edit operations through `setInput`, `setOutput`, `replace` and `remove`,
 * which keep the index; lookups check each indexed entry against the operation as it is now.
 */
export class ModelGraph {
  readonly operands: OperandJson[];
  /** Operations in run order; a removed one becomes undefined until `toJson`. */
  readonly operations: (OperationJson | undefined)[];
  readonly inputIndexes: number[];
  readonly outputIndexes: readonly number[];
  readonly #model: ModelJson;
  readonly #outputs: Set<number>;
  /** Operand -> indexes of the operations that read it (stale entries are skipped on lookup). */
  readonly #readers = new Map<number, Set<number>>();
  /** Operand -> index of the operation that writes it (checked on lookup). */
  readonly #writers = new Map<number, number>();

  constructor(model: ModelJson) {
    this.#model = model;
    this.operands = model.operands.map((o) => ({ ...o }));
    this.operations = model.operations.map((o) => ({
      ...o,
      inputs: [...o.inputs],
      outputs: [...o.outputs],
    }));
    this.inputIndexes = [...model.inputIndexes];
    this.outputIndexes = [...model.outputIndexes];
    this.#outputs = new Set(this.outputIndexes);
    this.#reindex();
  }

  /** Rebuilds the reader and writer index from the operations as they are. */
  #reindex(): void {
    this.#readers.clear();
    this.#writers.clear();
    this.operations.forEach((operation, index) => {
      if (operation) this.#indexOperation(index, operation);
    });
  }

  #indexOperation(index: number, operation: OperationJson): void {
    for (const operand of operation.inputs) this.#addReader(operand, index);
    for (const operand of operation.outputs) this.#writers.set(operand, index);
  }

  #addReader(operand: number, index: number): void {
    let readers = this.#readers.get(operand);
    if (!readers) this.#readers.set(operand, readers = new Set());
    readers.add(index);
  }

  /** Operations (with their index, in run order) that read `operand`. */
  readers(operand: number): IndexedOperation[] {
    return this.#liveReaders(operand, Infinity).sort((a, b) => a.index - b.index);
  }

  /**
   * The one operation reading `operand` when nothing else sees it (not a model output). Stops
   * at a second reader: a value read by thousands of operations costs no more than two.
   */
  soleReader(operand: number): IndexedOperation | undefined {
    if (this.isOutput(operand)) return undefined;
    const readers = this.#liveReaders(operand, 2);
    return readers.length === 1 ? readers[0] : undefined;
  }

  /** Up to `most` operations that read `operand` now, in no particular order. */
  #liveReaders(operand: number, most: number): IndexedOperation[] {
    const found: IndexedOperation[] = [];
    for (const index of this.#readers.get(operand) ?? []) {
      const operation = this.operations[index];
      if (operation?.inputs.includes(operand)) found.push({ index, operation });
      if (found.length >= most) break;
    }
    return found;
  }

  /** The operation that writes `operand`, if any. */
  writer(operand: number): IndexedOperation | undefined {
    const index = this.#writers.get(operand);
    const operation = index === undefined ? undefined : this.operations[index];
    return index !== undefined && operation?.outputs.includes(operand)
      ? { index, operation }
      : undefined;
  }

  /** Makes input `k` of the operation at `index` read `operand`. */
  setInput(index: number, k: number, operand: number): void {
    this.operations[index]!.inputs[k] = operand;
    this.#addReader(operand, index);
  }

  /** Makes output `k` of the operation at `index` write `operand`. */
  setOutput(index: number, k: number, operand: number): void {
    this.operations[index]!.outputs[k] = operand;
    this.#writers.set(operand, index);
  }

  /** Puts `operation` in place of the operation at `index`. */
  replace(index: number, operation: OperationJson): void {
    this.operations[index] = operation;
    this.#indexOperation(index, operation);
  }

  /** Whether `operand` is an output of the model. */
  isOutput(operand: number): boolean {
    return this.#outputs.has(operand);
  }

  /** The value of a constant INT32 / BOOL / FLOAT32 scalar or tensor, as numbers. */
  constantValues(operand: number): number[] | undefined {
    const o = this.operands[operand];
    if (o.lifetime !== "CONSTANT_COPY" && o.lifetime !== "CONSTANT_REFERENCE") return undefined;
    if (Array.isArray(o.value)) return o.value.map(Number);
    if (!o.value || !("base64" in o.value)) return undefined;
    const bytes = Uint8Array.fromBase64(o.value.base64);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    switch (o.type) {
      case "INT32":
      case "TENSOR_INT32":
        return Array.from({ length: bytes.length / 4 }, (_, i) => view.getInt32(4 * i, true));
      case "FLOAT32":
      case "TENSOR_FLOAT32":
        return Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(4 * i, true));
      case "BOOL":
      case "TENSOR_BOOL8":
        return Array.from(bytes);
      default:
        return undefined;
    }
  }

  /** Adds an operand; returns its index. */
  addOperand(operand: OperandJson): number {
    this.operands.push(operand);
    return this.operands.length - 1;
  }

  /** An INT32 scalar constant of `value` (a new operand: shared ones are never edited). */
  int32Scalar(value: number): number {
    return this.addOperand(int32ScalarOperand(value));
  }

  /**
   * Inserts an operation before the operation at `at` (or appends it). Inserting before an
   * operation moves the later ones, so the index is rebuilt: linear in the graph's size.
   */
  insert(at: number | undefined, type: OperationType, inputs: number[], outputs: number[]): void {
    const operation = { type, inputs, outputs };
    if (at === undefined) {
      this.operations.push(operation);
      this.#indexOperation(this.operations.length - 1, operation);
    } else {
      this.operations.splice(at, 0, operation);
      this.#reindex();
    }
  }

  /** Replaces every operation by `operations` (a pass that rewrote the graph in order). */
  replaceAll(operations: readonly OperationJson[]): void {
    // One by one: spreading a long list into push's arguments overflows the stack.
    this.operations.length = 0;
    for (const operation of operations) this.operations.push(operation);
    this.#reindex();
  }

  /** Removes the operation at `index` (indexes of the others stay until `toJson`). */
  remove(index: number): void {
    this.operations[index] = undefined;
  }

  /**
   * The edited model: operations in order, and only the operands that an operation, the
   * model's inputs or outputs refer to (renumbered).
   */
  toJson(): ModelJson {
    const operations = this.operations.filter((o): o is OperationJson => o !== undefined);
    const used = new Set<number>([...this.inputIndexes, ...this.outputIndexes]);
    for (const o of operations) for (const i of [...o.inputs, ...o.outputs]) used.add(i);
    const renumbered = new Map<number, number>();
    const operands: OperandJson[] = [];
    this.operands.forEach((operand, i) => {
      if (!used.has(i)) return;
      renumbered.set(i, operands.length);
      operands.push(operand);
    });
    const map = (i: number) => renumbered.get(i)!;
    return {
      ...this.#model,
      operands,
      operations: operations.map((o) => ({
        ...o,
        inputs: o.inputs.map(map),
        outputs: o.outputs.map(map),
      })),
      inputIndexes: this.inputIndexes.map(map),
      outputIndexes: this.outputIndexes.map(map),
    };
  }
}
