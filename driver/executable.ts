/**
 * Runs a prepared plan. An `Executable` binds each step to its kernel once (XNNPACK's
 * create/setup split); every `run` gets its own tensors, so concurrent runs of one
 * executable never share mutable memory.
 */
import { DriverError } from "../nnapi/errors.ts";
import {
  checkDeclaredShape,
  checkTensorSize,
  type Kernel,
  OperationError,
  operationFault,
  type PrepareInput,
  ValueNotYetKnown,
} from "./operations/operation.ts";
import { operationDefinition } from "./operations/registry.ts";
import type { OperationDefinition } from "./operations/operation.ts";
import type { StepImplementation } from "./devices/device.ts";
import { constantView, type PreparedModel, stepImplementation } from "./prepared_model.ts";
import {
  allocate,
  elementCount,
  type Tensor,
  type TensorData,
  typedView,
} from "../nnapi/tensor.ts";

/** A model input as given to `run`: its data (null when omitted) and its full shape. */
export interface RunInput {
  data: TensorData | null;
  shape: number[];
}

/** A model output after `run`. */
export interface RunOutput {
  shape: number[];
  data: TensorData;
}

interface BoundStep {
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

/** A plan bound to kernels, ready to run many times. */
export class Executable {
  readonly prepared: PreparedModel;
  readonly #steps: BoundStep[];
  readonly #constants: (TensorData | undefined)[];

  constructor(prepared: PreparedModel) {
    this.prepared = prepared;
    this.#constants = prepared.operands.map((o) =>
      o.constant ? constantView(prepared, o.constant) : undefined
    );
    this.#steps = prepared.steps.map((step) => {
      const definition = operationDefinition(step.type);
      if (!definition) {
        throw new DriverError("GENERAL_FAILURE", `no kernel for ${step.type}`);
      }
      const info = (i: number) => ({ ...prepared.operands[i], value: this.#constants[i] });
      const packed = (step.packed ?? []).map((ref) => constantView(prepared, ref));
      const implementation = stepImplementation(step);
      // The device's kernel for the planned shapes; the reference kernel otherwise.
      const selected = prepared.arena !== undefined &&
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
  }

  /**
   * Rebuilds the raw values of constants the plan keeps only packed, for the reference
   * kernel (a worker without the optimized kernel, or a run on unplanned shapes).
   */
  #unpack(step: BoundStep): void {
    const { operands } = this.prepared;
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

  /** Runs the plan on the given inputs (already checked against the model). */
  run(inputs: readonly RunInput[]): RunOutput[] {
    const { operands, arena, inputIndexes } = this.prepared;
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
      const buffer = new ArrayBuffer(arena.size);
      arena.offsets.forEach((offset, i) => {
        if (offset < 0) return;
        const operand = operands[i];
        tensors[i] = {
          ...operand,
          data: typedView(operand.type, buffer, offset, elementCount(operand.shape)),
        };
      });
    }
    for (const step of this.#steps) {
      const stepInputs = step.inputs.map((i) => tensors[i]!);
      if (!staticShapes) this.#shapeOutputs(step, stepInputs, tensors);
      const stepOutputs = step.outputs.map((i) => tensors[i]!);
      try {
        step.kernel(stepInputs, stepOutputs);
      } catch (error) {
        if (error instanceof OperationError) {
          throw operationFault(step.operation, step.definition.type, error.message);
        }
        throw error;
      }
    }
    return this.prepared.outputIndexes.map((i) => {
      const t = tensors[i]!;
      return { shape: [...t.shape], data: t.data! };
    });
  }

  /** Dynamic path: infers this step's output shapes from the actual inputs and allocates. */
  #shapeOutputs(step: BoundStep, stepInputs: Tensor[], tensors: (Tensor | undefined)[]): void {
    const { operands } = this.prepared;
    const prepareInputs: PrepareInput[] = stepInputs.map((t) => ({ ...t, value: t.data }));
    let shapes: number[][];
    try {
      shapes = step.definition.prepare(prepareInputs, step.outputs.map((i) => operands[i]));
      step.outputs.forEach((out, j) => {
        checkDeclaredShape(operands[out].shape, shapes[j], `output ${j} (operand ${out})`);
        checkTensorSize(operands[out].type, shapes[j], `output ${j} (operand ${out})`);
      });
    } catch (error) {
      if (error instanceof OperationError) {
        throw operationFault(step.operation, step.definition.type, error.message);
      }
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

/**
 * Runs and times one execution, turning every failure into a DriverError (an allocation
 * that cannot be had is RESOURCE_EXHAUSTED_PERSISTENT). Used by executor workers and by the
 * driver for plans small enough to run on its own thread.
 */
export function runMeasured(
  executable: Executable,
  inputs: readonly RunInput[],
): { outputs: RunOutput[]; onDeviceUs: number } {
  try {
    const started = performance.now();
    const outputs = executable.run(inputs);
    return { outputs, onDeviceUs: Math.round((performance.now() - started) * 1000) };
  } catch (error) {
    if (error instanceof DriverError) throw error;
    if (error instanceof RangeError) {
      throw new DriverError(
        "RESOURCE_EXHAUSTED_PERSISTENT",
        `the execution needs more memory than is available (${error.message})`,
      );
    }
    throw new DriverError("GENERAL_FAILURE", String(error));
  }
}
