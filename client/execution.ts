/**
 * `Execution`: one inference on a compilation, as `ANeuralNetworksExecution_*`: set every
 * input (or omit an optional one), optionally describe outputs, then `compute`. The
 * execution owns its request; outputs come back as typed arrays of each output's type,
 * except those written to a memory (`setOutputFromMemory`) or a driver-managed buffer
 * (`setOutputFromBuffer`), which stay there.
 */
import { toBase64 } from "./base64.ts";
import type { DeviceBuffer } from "./buffer.ts";
import { frameBody, INFERENCE_HEADER_LENGTH, readFramed } from "./binary_frame.ts";
import { NnapiError, type Transport } from "./http.ts";
import { checkMemoryRegion, type Memory, type MemoryRange } from "./memory.ts";
import {
  decodeBase64,
  fromJsonNumber,
  fromLittleEndian,
  littleEndianBytes,
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
  /** The compilation's id. */
  readonly id: string;
  /** The model's inputs and outputs, which requests are encoded and decoded by. */
  readonly signature: ModelSignature;
}

/** Dimensions completing an operand whose model dimensions are not fully known. */
export interface ArgumentOptions {
  /** The operand's full dimensions for this execution (copied when set). */
  dimensions?: readonly number[];
}

/** One output of a computed execution. */
export interface ExecutionOutput {
  /** The dimensions the execution computed. */
  dimensions: number[];
  /**
   * The values in the output operand's type (Float32Array, Uint8Array, ...); absent when
   * the output was written to a memory region (`setOutputFromMemory`) or a buffer
   * (`setOutputFromBuffer`): read it from there.
   */
  data?: TensorArray;
}

/** What `compute` returns. */
export interface ExecutionResult {
  /** One per model output, in model order. */
  outputs: ExecutionOutput[];
  /** Every output's dimensions and whether the space given for it sufficed. */
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

/** An input given as typed data: its little-endian bytes, sent raw by `compute`. */
interface BytesInput {
  bytes: Uint8Array;
  dimensions?: number[];
}

/**
 * An execution being set up; `compute` may be called more than once. Typed-array inputs
 * and all inline outputs travel as raw bytes (a framed body, docs/api.md's binary tensors);
 * `toJSON` gives the same request as JSON with base64.
 */
export class Execution {
  readonly #transport: Transport;
  readonly #target: ExecutionTarget;
  readonly #inputs: (ArgumentJson | BytesInput | undefined)[];
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
   * to the operand's type and sent as raw little-endian bytes (copied now: later changes
   * to the array are not sent); number arrays as JSON numbers. A number is a scalar.
   */
  setInput(index: number, data: TensorValues | number, options: ArgumentOptions = {}): this {
    const type = this.#check("input", index);
    const dimensions = copyDimensions(options.dimensions);
    if (typeof data === "number") {
      this.#inputs[index] = { data: [toJsonNumber(data)], ...dimensions };
    } else if (Array.isArray(data)) {
      this.#inputs[index] = { data: data.map(toJsonNumber), ...dimensions };
    } else {
      const bytes = littleEndianBytes(toTensorArray(type, data));
      this.#inputs[index] = {
        bytes: ArrayBuffer.isView(data) && bytes.buffer === data.buffer ? bytes.slice() : bytes,
        ...dimensions,
      };
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

  /**
   * Gives input `index` the contents of a driver-managed `buffer` (NNAPI `setInputFromMemory`
   * with device memory): what an earlier execution or `copyFrom` wrote there, read on the
   * service. The buffer must have been allocated for this input (else INVALID_ARGUMENT).
   */
  setInputFromBuffer(index: number, buffer: DeviceBuffer, options: ArgumentOptions = {}): this {
    this.#check("input", index);
    this.#inputs[index] = { buffer: buffer.token, ...copyDimensions(options.dimensions) };
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

  /**
   * Makes the execution write output `index` into a driver-managed `buffer`, replacing its
   * contents; the data stays on the service and `compute` returns only the output's
   * dimensions. The buffer must have been allocated for this output (else INVALID_ARGUMENT).
   */
  setOutputFromBuffer(index: number, buffer: DeviceBuffer, options: ArgumentOptions = {}): this {
    this.#check("output", index);
    this.#outputs[index] = { buffer: buffer.token, ...copyDimensions(options.dimensions) };
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

  /** The request's options and outputs, common to its JSON and framed forms. */
  #requestOptions(): Omit<ExecutionRequestJson, "inputs" | "outputEncoding"> {
    return {
      ...(this.#outputs.some((arg) => arg !== undefined)
        ? { outputs: this.#outputs.map((arg) => arg ?? {}) }
        : {}),
      ...(this.#measureTiming ? { measureTiming: true } : {}),
      ...(this.#deadlineMs !== undefined ? { deadlineMs: this.#deadlineMs } : {}),
    };
  }

  #setInputs(): (ArgumentJson | BytesInput)[] {
    const missing = this.#inputs.findIndex((arg) => arg === undefined);
    if (missing >= 0) {
      throw new Error(`input ${missing} has no value: call setInput or setInputOmitted`);
    }
    return this.#inputs as (ArgumentJson | BytesInput)[];
  }

  /**
   * The request body of `POST /v1/compilations/{id}/executions` as set up so far, as JSON
   * (typed inputs as base64).
   */
  toJSON(): ExecutionRequestJson {
    return {
      inputs: this.#setInputs().map((arg) =>
        "bytes" in arg ? { base64: toBase64(arg.bytes), ...copyDimensions(arg.dimensions) } : arg
      ),
      ...this.#requestOptions(),
      outputEncoding: "base64",
    };
  }

  /** Runs the execution and waits for its outputs. */
  async compute(): Promise<ExecutionResult> {
    const tensors: Uint8Array[] = [];
    const inputs = this.#setInputs().map((arg): ArgumentJson => {
      if (!("bytes" in arg)) return arg;
      tensors.push(arg.bytes);
      return {
        parameters: { binary_data_size: arg.bytes.byteLength },
        ...copyDimensions(arg.dimensions),
      };
    });
    const request = { inputs, ...this.#requestOptions(), outputEncoding: "binary" as const };
    const { body, headerLength } = frameBody(request, tensors);
    const path = `/v1/compilations/${encodeURIComponent(this.#target.id)}/executions`;
    const response = await this.#transport.send("POST", path, { bytes: body }, {
      [INFERENCE_HEADER_LENGTH]: String(headerLength),
    });
    const { header, binary } = await readFramed(response, `POST ${path}`);
    return decodeResult(
      this.#target.signature,
      header as ExecutionResponseJson,
      this.#outputs.map((arg) => arg !== undefined && ("memory" in arg || "buffer" in arg)),
      binary,
    );
  }
}

/**
 * Turns an execution response into typed outputs of the model's output types. Outputs
 * flagged in `inMemory` were written to a memory or buffer and come back with dimensions
 * only. `binary` holds the bytes after a framed answer's header.
 */
export function decodeResult(
  signature: ModelSignature,
  body: ExecutionResponseJson,
  inMemory: readonly boolean[] = [],
  binary: Uint8Array = new Uint8Array(),
): ExecutionResult {
  let offset = 0;
  const outputs = body.outputs.map((output, k): ExecutionOutput => {
    const type = signature.outputs[k]?.type;
    if (type === undefined) {
      throw new Error(
        `the service returned output ${k}; the model has ${signature.outputs.length}`,
      );
    }
    let data: TensorArray;
    const size = output.parameters?.binary_data_size;
    if (size !== undefined) {
      if (offset + size > binary.byteLength) {
        throw new NnapiError(
          "GENERAL_FAILURE",
          200,
          `output ${k}: ${size} bytes announced, ${binary.byteLength - offset} left in the answer`,
        );
      }
      data = fromLittleEndian(type, binary.subarray(offset, offset + size));
      offset += size;
    } else if (output.base64 !== undefined) data = decodeBase64(type, output.base64);
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
