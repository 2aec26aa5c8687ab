/**
 * `Compilation`: a model prepared by the service for execution
 * (`ANeuralNetworksCompilation_*`), and the executions that run on it.
 */
import { toBase64 } from "./base64.ts";
import { allocateBuffer, type BufferRequest, type DeviceBuffer } from "./buffer.ts";
import type { Burst } from "./burst.ts";
import { type BurstOpenOptions, openBurst } from "./burst_open.ts";
import type { Transport } from "./http.ts";
import { Execution, type ExecutionResult } from "./execution.ts";
import { Model } from "./model.ts";
import type { TensorValues } from "./tensor.ts";
import type { ModelInfo, ModelSignature } from "./types.ts";

/** Options of `NnClient.compile` (docs/api.md `POST /v1/compilations`). */
export interface CompileOptions {
  /**
   * NNAPI's execution preference (default FAST_SINGLE_ANSWER). The partitioner plans for one
   * execution's latency whichever is given (the plan's `objective` is always "latency"): the
   * devices here share the host's cores and run a plan's steps one after the other, so the
   * fastest single answer is also the highest sustained rate and the least energy.
   */
  preference?: "LOW_POWER" | "FAST_SINGLE_ANSWER" | "SUSTAINED_SPEED";
  /** Where its executions queue when every executor is busy (default MEDIUM). */
  priority?: "LOW" | "MEDIUM" | "HIGH";
  /** Device names; by default the service chooses among all its devices. */
  devices?: readonly string[];
  /** Fails with MISSED_DEADLINE_* when preparation takes longer. */
  deadlineMs?: number;
  /** A 32-byte token (or its base64) selecting this client's compilation cache entry. */
  cache?: { token: Uint8Array | string };
  /**
   * Dynamic batching: concurrent executions (REST and bursts alike) stacked along the
   * inputs' first extent into runs of at most `maxBatchSize` rows, each answered with its
   * own rows. The model's inputs and outputs must leave their first extent open.
   */
  batching?: {
    maxBatchSize: number;
    /** The sizes runs take; a batch is padded with zero rows up to the next one. */
    preferredBatchSizes?: readonly number[];
    /** How long the oldest queued execution waits for others while an executor is free. */
    maxQueueDelayUs: number;
    /** Executions queued at most (default 64); more are refused RESOURCE_EXHAUSTED_TRANSIENT. */
    maxQueueSize?: number;
  };
}

/** What the service reports of a created compilation. */
export interface CompilationInfo {
  /** The compilation's id, which executions, buffers and bursts name it by. */
  id: string;
  /** The id of the model it prepared. */
  model: string;
  /** Whether a cache token was given and its entry used (hit) or written (miss). */
  cache: "hit" | "miss" | "none";
  /** How long preparation took on the service. */
  prepareMs: number;
  /** Fields this SDK does not type (later versions of the service may add more). */
  [field: string]: unknown;
}

/** Options of `Compilation.compute`. */
export interface ComputeOptions {
  /** Asks for on-device and in-driver durations (`ExecutionResult.timing`). */
  measureTiming?: boolean;
  /** Fails the execution with MISSED_DEADLINE_* when it takes longer. */
  deadlineMs?: number;
}

/** A prepared model of the service. */
export class Compilation {
  readonly #transport: Transport;
  /** The service's answer, with any fields beyond those typed here. */
  readonly info: CompilationInfo;
  /** The model's inputs and outputs, which executions encode and decode by. */
  readonly signature: ModelSignature;

  /** Use `NnClient.compile`. */
  constructor(transport: Transport, info: CompilationInfo, signature: ModelSignature) {
    this.#transport = transport;
    this.info = info;
    this.signature = signature;
  }

  /** What executions, buffers, bursts and `GET /v1/compilations/{id}` refer to it by. */
  get id(): string {
    return this.info.id;
  }

  /** The compiled model's id. */
  get model(): string {
    return this.info.model;
  }

  /** Whether the preparation came from the compilation cache. */
  get cache(): "hit" | "miss" | "none" {
    return this.info.cache;
  }

  /** How long the service took to prepare the model. */
  get prepareMs(): number {
    return this.info.prepareMs;
  }

  /** A new execution on this compilation. */
  execution(): Execution {
    return new Execution(this.#transport, this);
  }

  /**
   * Runs one execution with the inputs in model order (`null` omits an optional input) and
   * every output returned as computed.
   */
  compute(
    inputs: readonly (TensorValues | number | null)[],
    options: ComputeOptions = {},
  ): Promise<ExecutionResult> {
    const execution = this.execution();
    inputs.forEach((data, i) => {
      if (data === null) execution.setInputOmitted(i);
      else execution.setInput(i, data);
    });
    if (options.measureTiming) execution.setMeasureTiming(true);
    if (options.deadlineMs !== undefined) execution.setDeadline(options.deadlineMs);
    return execution.compute();
  }

  /**
   * Opens a burst on this compilation (NNAPI `ANeuralNetworksBurst_create`): executions over
   * one WebSocket, with a memory slot cache and pipelining. Close it when done.
   */
  burst(options?: BurstOpenOptions): Promise<Burst> {
    return openBurst(this.#transport, this, options);
  }

  /**
   * Allocates a driver-managed buffer for inputs and outputs of this compilation (docs/api.md
   * "Memory domains"): it keeps data on the service between executions. Roles outside the
   * model's inputs and outputs throw RangeError before anything is sent.
   */
  allocateBuffer(request: BufferRequest): Promise<DeviceBuffer> {
    return allocateBuffer(this.#transport, this, request);
  }

  /** Releases the compilation on the service, and the buffers allocated for it. */
  async delete(): Promise<void> {
    await this.#transport.json("DELETE", `/v1/compilations/${encodeURIComponent(this.id)}`);
  }
}

/**
 * Prepares a model (a `Model`, finished first if needed, or the id of a registered model,
 * whose inputs and outputs are then read from its metadata).
 */
export async function compile(
  transport: Transport,
  model: Model | string,
  options: CompileOptions = {},
): Promise<Compilation> {
  let id: string;
  let signature: ModelSignature;
  if (model instanceof Model) {
    id = await model.finish();
    signature = model.signature();
  } else {
    const info = await transport.json<ModelInfo>("GET", `/v1/models/${encodeURIComponent(model)}`);
    id = info.id;
    signature = { inputs: info.inputs, outputs: info.outputs };
  }
  const token = options.cache?.token;
  const info = await transport.json<CompilationInfo>("POST", "/v1/compilations", {
    model: id,
    ...(options.preference ? { preference: options.preference } : {}),
    ...(options.priority ? { priority: options.priority } : {}),
    ...(options.devices ? { devices: [...options.devices] } : {}),
    ...(options.deadlineMs !== undefined ? { deadlineMs: options.deadlineMs } : {}),
    ...(options.batching ? { batching: options.batching } : {}),
    ...(token !== undefined
      ? { cache: { token: typeof token === "string" ? token : toBase64(token) } }
      : {}),
  });
  return new Compilation(transport, info, signature);
}
