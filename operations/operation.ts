/**
 * The contract every NNAPI operation module fulfils (one file per operation, registered in
 * `table.ts`): signature validation at model registration, shape inference at
 * preparation (or execution, for shapes that depend on runtime values), and kernels.
 */
import { invalid } from "../nnapi/errors.ts";
import {
  byteSize,
  type ChannelQuant,
  elementCount,
  MAX_TENSOR_BYTES,
  type Tensor,
  type TensorData,
  type TensorInfo,
} from "../nnapi/tensor.ts";
import type { HalVersion, Lifetime, OperandType, OperationType } from "../nnapi/types.ts";

/** An operand as the model declares it, seen by an operation's `validate`. */
export interface DeclaredOperand {
  /** Index in the model's operand list, for messages. */
  index: number;
  type: OperandType;
  dimensions: readonly number[];
  scale: number;
  zeroPoint: number;
  lifetime: Lifetime;
  channelQuant?: ChannelQuant;
  /** The value when the operand is a constant. */
  value?: TensorData;
}

/** A referenced subgraph's declared inputs and outputs (what IF and WHILE must agree with). */
export interface SubgraphSignature {
  inputs: readonly DeclaredOperand[];
  outputs: readonly DeclaredOperand[];
}

/**
 * What `validate` sees: the declared operands of one operation and, for the control-flow
 * operations, the signatures of the model's referenced subgraphs (which their SUBGRAPH
 * inputs name by index), as NNAPI's validateOperation receives the model's subgraphs.
 */
export interface OperationSignature {
  type: OperationType;
  inputs: readonly DeclaredOperand[];
  outputs: readonly DeclaredOperand[];
  referenced?: readonly SubgraphSignature[];
}

/**
 * An input during shape inference: `value` is the data when known (a constant at
 * preparation, anything at execution), `undefined` when only known at execution, and
 * `null` for an omitted optional input.
 */
export interface PrepareInput extends TensorInfo {
  value: TensorData | null | undefined;
}

/** A kernel: reads the input tensors, writes the output tensors (already shaped). */
export type Kernel = (inputs: readonly Tensor[], outputs: readonly Tensor[]) => void;

/**
 * One NNAPI operation: everything the driver needs to validate, plan and run it. `T` ties a
 * definition to its operation type, so the table cannot file it under another one.
 */
export interface OperationDefinition<T extends OperationType = OperationType> {
  readonly type: T;
  /** Input positions that may have no value (NO_VALUE operands, omitted model inputs). */
  readonly optionalInputs?: readonly number[];
  /**
   * Whether its outputs depend on its inputs' shapes alone, never their values (RANK,
   * SHAPE): shape inference then works its (small) outputs out without any input value.
   */
  readonly readsOnlyShapes?: boolean;
  /**
   * Checks input/output counts, operand types, ranks and quantization rules against the
   * declared operands, and returns the HAL version the operation needs in this form.
   * Throws {@link OperationError} on any fault.
   */
  validate(signature: OperationSignature): HalVersion;
  /**
   * Infers the output shapes from the inputs (throws {@link OperationError} when they are
   * inconsistent, {@link ValueNotYetKnown} via the helpers when a needed value is only known
   * at execution). Output type and quantization come from the declared outputs.
   */
  prepare(inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]): number[][];
  /** The reference kernel: plain typed-array loops, the executable specification. */
  execute: Kernel;
  /**
   * The reference kernel with its constant parameters computed once for these (fully
   * shaped) operands — quantized multipliers, lookup tables — bit-identical to `execute`;
   * undefined when there is nothing to precompute.
   */
  bindReference?(
    inputs: readonly PrepareInput[],
    outputs: readonly TensorInfo[],
  ): Kernel | undefined;
  /**
   * Estimated work of one run on these (fully shaped) operands, in multiply-adds or
   * comparable element operations: taps of windows, MACs of matrix products. Constant
   * inputs carry their `value`; an unknown value needs an upper bound. Without the hook the
   * cost is {@link elementWork}; {@link operationWork} applies the default.
   */
  cost?(inputs: readonly PrepareInput[], outputs: readonly TensorInfo[]): number;
}

/** Elements read and written: the work of operations that touch each element a few times. */
export function elementWork(
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
): number {
  let work = 0;
  for (const input of inputs) if (input.value !== null) work += elementCount(input.shape);
  for (const output of outputs) work += elementCount(output.shape);
  return work;
}

/** The estimated work of one run of an operation: its `cost` hook, or {@link elementWork}. */
export function operationWork(
  definition: OperationDefinition,
  inputs: readonly PrepareInput[],
  outputs: readonly TensorInfo[],
): number {
  return definition.cost?.(inputs, outputs) ?? elementWork(inputs, outputs);
}

/** A fault in one operation's operands; the driver prefixes the operation's index and type. */
export class OperationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "OperationError";
  }
}

/** Thrown when shape inference needs a value that is only known at execution. */
export class ValueNotYetKnown extends Error {
  constructor() {
    super("value known only at execution");
    this.name = "ValueNotYetKnown";
  }
}

/** Throws an {@link OperationError} unless the condition holds. */
export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new OperationError(message);
}

/** Checks the input count is one of `allowed` and the output count is `outputs`. */
export function checkArity(
  signature: OperationSignature,
  allowedInputs: readonly number[],
  outputs: number | readonly number[],
): void {
  const n = signature.inputs.length;
  check(
    allowedInputs.includes(n),
    `expected ${allowedInputs.join(" or ")} inputs, got ${n}`,
  );
  const allowedOutputs = typeof outputs === "number" ? [outputs] : outputs;
  check(
    allowedOutputs.includes(signature.outputs.length),
    `expected ${allowedOutputs.join(" or ")} outputs, got ${signature.outputs.length}`,
  );
}

/**
 * Checks operand types position by position (NNAPI `validateOperationOperandTypes`);
 * `expectedInputs` may be shorter than the inputs only if `restInputs` covers the rest.
 */
export function checkTypes(
  signature: OperationSignature,
  expectedInputs: readonly OperandType[],
  expectedOutputs: readonly OperandType[],
): void {
  signature.inputs.forEach((operand, i) => {
    const expected = expectedInputs[i];
    check(
      expected === operand.type,
      `input ${i} (operand ${operand.index}) has type ${operand.type}, expected ${expected}`,
    );
  });
  signature.outputs.forEach((operand, i) => {
    const expected = expectedOutputs[i];
    check(
      expected === operand.type,
      `output ${i} (operand ${operand.index}) has type ${operand.type}, expected ${expected}`,
    );
  });
}

/** Checks the rank of a declared operand when it is known (NNAPI: rank 0 = unknown). */
export function checkRank(
  operand: DeclaredOperand,
  what: string,
  allowed: (rank: number) => boolean,
  expectation: string,
): void {
  const rank = operand.dimensions.length;
  if (rank === 0) return;
  check(
    allowed(rank),
    `${what} (operand ${operand.index}) has rank ${rank}, expected ${expectation}`,
  );
}

/** The single value of a scalar input; throws {@link ValueNotYetKnown} before execution. */
export function scalarValue(input: PrepareInput, what: string): number {
  if (input.value === undefined) throw new ValueNotYetKnown();
  check(input.value !== null && input.value.length >= 1, `${what} has no value`);
  return Number(input.value[0]);
}

/** The data of an input needed for shape inference (e.g. a RESHAPE shape tensor). */
export function tensorValue(input: PrepareInput, what: string): TensorData {
  if (input.value === undefined) throw new ValueNotYetKnown();
  check(input.value !== null, `${what} has no value`);
  return input.value;
}

/** Reads a scalar operand during execution (scalar inputs are never omitted there). */
export function scalarOf(tensor: Tensor): number {
  return Number(tensor.data![0]);
}

/**
 * Checks that the model's declared output dims agree with the inferred ones; a declared
 * 0 (unknown) matches anything.
 */
export function checkDeclaredShape(
  declared: readonly number[],
  inferred: readonly number[],
  what: string,
): void {
  if (declared.length === 0) return;
  check(
    declared.length === inferred.length &&
      declared.every((d, i) => d === 0 || d === inferred[i]),
    `${what} is declared [${declared.join(",")}] but computes to [${inferred.join(",")}]`,
  );
}

/** Rejects a computed shape whose tensor would exceed {@link MAX_TENSOR_BYTES}. */
export function checkTensorSize(type: OperandType, shape: readonly number[], what: string): void {
  const bytes = byteSize(type, shape);
  check(
    bytes <= MAX_TENSOR_BYTES,
    `${what} would be [${shape.join(",")}], ${bytes} bytes, over the tensor size limit`,
  );
}

/** Throws the INVALID_ARGUMENT DriverError for an operation fault. */
export function operationFault(index: number, type: OperationType, message: string) {
  return invalid(`operation ${index} (${type}): ${message}`, { path: ["operations", index] });
}
