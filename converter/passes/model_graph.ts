/**
 * Editing a converted model's main graph between conversion and registration: who writes
 * and who reads each operand, constants by value, new operands and operations, and a final
 * compaction that drops operands nothing refers to any more. The optimization passes
 * (`fuse_activations.ts`, `nhwc_layout.ts`) are written against it, not against a front end.
 */
import type { ModelJson, OperandJson, OperationJson } from "../../driver/model/model_schema.ts";
import type { OperationType } from "../../nnapi/types.ts";

/** A mutable view of a model's main graph (referenced subgraphs are kept as they are). */
export class ModelGraph {
  readonly operands: OperandJson[];
  /** Operations in run order; a removed one becomes undefined until `toJson`. */
  readonly operations: (OperationJson | undefined)[];
  readonly inputIndexes: number[];
  readonly outputIndexes: number[];
  readonly #model: ModelJson;

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
  }

  /** Operations (with their index) that read `operand`. */
  readers(operand: number): { index: number; operation: OperationJson }[] {
    const found: { index: number; operation: OperationJson }[] = [];
    this.operations.forEach((operation, index) => {
      if (operation?.inputs.includes(operand)) found.push({ index, operation });
    });
    return found;
  }

  /** The one operation reading `operand` when nothing else sees it (not a model output). */
  soleReader(operand: number): { index: number; operation: OperationJson } | undefined {
    const readers = this.readers(operand);
    return readers.length === 1 && !this.isOutput(operand) ? readers[0] : undefined;
  }

  /** The operation that writes `operand`, if any. */
  writer(operand: number): { index: number; operation: OperationJson } | undefined {
    const index = this.operations.findIndex((o) => o?.outputs.includes(operand));
    return index < 0 ? undefined : { index, operation: this.operations[index]! };
  }

  /** Whether `operand` is an output of the model. */
  isOutput(operand: number): boolean {
    return this.outputIndexes.includes(operand);
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
    return this.addOperand({
      type: "INT32",
      dimensions: [],
      scale: 0,
      zeroPoint: 0,
      lifetime: "CONSTANT_COPY",
      value: [value],
    });
  }

  /** Inserts an operation before the operation at `at` (or appends it). */
  insert(at: number | undefined, type: OperationType, inputs: number[], outputs: number[]): void {
    const operation = { type, inputs, outputs };
    if (at === undefined) this.operations.push(operation);
    else this.operations.splice(at, 0, operation);
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
