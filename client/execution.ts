/**
 * `Execution`: one inference on a compilation, as `ANeuralNetworksExecution_*`: set every
 * input (or omit an optional one), optionally describe outputs, then `compute`. The
 * execution owns its request; outputs come back as typed arrays of each output's type,
 * except those written to a memory (`setOutputFromMemory`), which stay there.
 */
import type { Transport } from "./http.ts";
import { checkMemoryRegion, type Memory, type MemoryRange } from "./memory.ts";
import {
  decodeBase64,
  encodeBase64,
  fromJsonNumber,
  type TensorArray,
  type TensorValues,
  toJsonNumber,
  toTensorArray,
} from "./tensor.ts";
import type {
  ArgumentJson,
  ExecutionRequestJson,
  ExecutionResponseJson,
  ModelSignature,
  OperandType,
  OutputShape,
  Timing,
} from "./types.ts";

/** The compilation an execution runs on: its id and the model's inputs and outputs. */
export interface ExecutionTarget {
  readonly id: string;
  readonly signature: ModelSignature;
}

/** Dimensions completing an operand whose model dimensions are not fully known. */
export interface ArgumentOptions {
  dimensions?: readonly number[];
}

/** One output of a computed execution. */
export interface ExecutionOutput {
  dimensions: number[];
  /**
   * The values in the output operand's type (Float32Array, Uint8Array, ...); absent when
   * the output was written to a memory region (`setOutputFromMemory`): read it from there.
   */
  data?: TensorArray;
}

/** What `compute` returns. */
export interface ExecutionResult {
  outputs: ExecutionOutput[];
  outputShapes: OutputShape[];
  /** Present when timing was measured. */
  timing?: Timing;
}

/**
 * `{dimensions}` holding a copy of the caller's dimensions, or nothing when there are none:
 * requests are built when set up and sent later, so they must not see later changes.
 */
export function copyDimensions(dimensions: readonly number[] | undefined): {
  dimensions?: number[];
} {
  return dimensions ? { dimensions: [...dimensions] } : {};
}

/** An execution being set up; `compute` may be called more than once. */
export class Execution {
  readonly #transport: Transport;
  readonly #target: ExecutionTarget;
  readonly #inputs: (ArgumentJson | undefined)[];
  readonly #outputs: (ArgumentJson | undefined)[];
  #measureTiming = false;
  #deadlineMs: number | undefined;

  /** Use `Compilation.execution()`. */
  constructor(transport: Transport, target: ExecutionTarget) {
    this.#transport = transport;
    this.#target = target;
    this.#inputs = target.signature.inputs.map(() => undefined);
    this.#outputs = target.signature.outputs.map(() => undefined);
  }

  #check(kind: "input" | "output", index: number): OperandType {
    const list = kind === "input" ? this.#target.signature.inputs : this.#target.signature.outputs;
    const described = list[index];
    if (!Number.isInteger(index) || described === undefined) {
      throw new RangeError(`no ${kind} ${index}: the model has ${list.length} ${kind}s`);
    }
    return described.type;
  }

  /** The argument of `set{Input,Output}FromMemory`, checked before anything is sent. */
  #memoryArgument(
    kind: "input" | "output",
    index: number,
    memory: Memory,
    region: MemoryRange & ArgumentOptions,
  ): ArgumentJson {
    this.#check(kind, index);
    const { offset, length } = region;
    const method = kind === "input" ? "setInputFromMemory" : "setOutputFromMemory";
    checkMemoryRegion(`${method}(${index})`, memory.size, offset, length);
    return { memory: memory.id, offset, length, ...copyDimensions(region.dimensions) };
  }

  /**
   * Gives input `index` (in the model's input order) its value. Typed arrays are converted
   * to the operand's type and sent as little-endian bytes; number arrays as JSON numbers.
   * A number is a scalar.
   */
  setInput(index: number, data: TensorValues | number, options: ArgumentOptions = {}): this {
    const type = this.#check("input", index);
    const dimensions = copyDimensions(options.dimensions);
    if (typeof data === "number") {
      this.#inputs[index] = { data: [toJsonNumber(data)], ...dimensions };
    } else if (Array.isArray(data)) {
      this.#inputs[index] = { data: data.map(toJsonNumber), ...dimensions };
    } else {
      this.#inputs[index] = { base64: encodeBase64(toTensorArray(type, data)), ...dimensions };
    }
    return this;
  }

  /**
   * Gives input `index` the `length` bytes of `memory` from `offset`: little-endian data of
   * the operand's type (NNAPI `ANeuralNetworksExecution_setInputFromMemory`). The bytes are
   * read when the execution runs.
   */
  setInputFromMemory(
    index: number,
    memory: Memory,
    offset: number,
    length: number,
    options: ArgumentOptions = {},
  ): this {
    this.#inputs[index] = this.#memoryArgument("input", index, memory, {
      offset,
      length,
      dimensions: options.dimensions,
    });
    return this;
  }

  /** Leaves optional input `index` without a value (NNAPI `setInput(i, NULL, 0)`). */
  setInputOmitted(index: number): this {
    this.#check("input", index);
    this.#inputs[index] = { omitted: true };
    return this;
  }

  /**
   * Describes output `index`: dimensions it is expected to have (a smaller size than the
   * result needs fails with OUTPUT_INSUFFICIENT_SIZE). Outputs not described come back as
   * they are.
   */
  setOutput(index: number, options: ArgumentOptions = {}): this {
    this.#check("output", index);
    this.#outputs[index] = copyDimensions(options.dimensions);
    return this;
  }

  /**
   * Makes the execution write output `index` into the `length` bytes of `memory` from
   * `offset` (NNAPI `ANeuralNetworksExecution_setOutputFromMemory`); `compute` then returns
   * only its dimensions. A region smaller than the output fails with
   * OUTPUT_INSUFFICIENT_SIZE.
   */
  setOutputFromMemory(
    index: number,
    memory: Memory,
    offset: number,
    length: number,
    options: ArgumentOptions = {},
  ): this {
    this.#outputs[index] = this.#memoryArgument("output", index, memory, {
      offset,
      length,
      dimensions: options.dimensions,
    });
    return this;
  }

  /** Asks the service for on-device and in-driver durations. */
  setMeasureTiming(measure: boolean): this {
    this.#measureTiming = measure;
    return this;
  }

  /** Fails the execution with MISSED_DEADLINE_* when it takes longer than `ms`. */
  setDeadline(ms: number | undefined): this {
    this.#deadlineMs = ms;
    return this;
  }

  /** The request body of `POST /v1/compilations/{id}/executions` as set up so far. */
  toJSON(): ExecutionRequestJson {
    const missing = this.#inputs.findIndex((arg) => arg === undefined);
    if (missing >= 0) {
      throw new Error(`input ${missing} has no value: call setInput or setInputOmitted`);
    }
    return {
      inputs: this.#inputs as ArgumentJson[],
      ...(this.#outputs.some((arg) => arg !== undefined)
        ? { outputs: this.#outputs.map((arg) => arg ?? {}) }
        : {}),
      ...(this.#measureTiming ? { measureTiming: true } : {}),
      ...(this.#deadlineMs !== undefined ? { deadlineMs: this.#deadlineMs } : {}),
      outputEncoding: "base64",
    };
  }

  /** Runs the execution and waits for its outputs. */
  async compute(): Promise<ExecutionResult> {
    const body = await this.#transport.json<ExecutionResponseJson>(
      "POST",
      `/v1/compilations/${encodeURIComponent(this.#target.id)}/executions`,
      this.toJSON(),
    );
    return decodeResult(
      this.#target.signature,
      body,
      this.#outputs.map((arg) => arg !== undefined && "memory" in arg),
    );
  }
}

/**
 * Turns an execution response into typed outputs of the model's output types. Outputs
 * flagged in `inMemory` were written to a memory and come back with dimensions only.
 */
export function decodeResult(
  signature: ModelSignature,
  body: ExecutionResponseJson,
  inMemory: readonly boolean[] = [],
): ExecutionResult {
  const outputs = body.outputs.map((output, k): ExecutionOutput => {
    const type = signature.outputs[k]?.type;
    if (type === undefined) {
      throw new Error(
        `the service returned output ${k}; the model has ${signature.outputs.length}`,
      );
    }
    let data: TensorArray;
    if (output.base64 !== undefined) data = decodeBase64(type, output.base64);
    else if (output.data !== undefined) {
      data = toTensorArray(type, output.data.map(fromJsonNumber));
    } else if (inMemory[k]) return { dimensions: output.dimensions };
    else throw new Error(`output ${k} came back without data`);
    return { dimensions: output.dimensions, data };
  });
  return {
    outputs,
    outputShapes: body.outputShapes,
    ...(body.timing ? { timing: body.timing } : {}),
  };
}
