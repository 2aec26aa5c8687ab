/**
 * `Compilation`: a model prepared by the service for execution
 * (`ANeuralNetworksCompilation_*`), and the executions that run on it.
 */
import { toBase64 } from "./base64.ts";
import type { Burst } from "./burst.ts";
import { type BurstOpenOptions, openBurst } from "./burst_open.ts";
import type { Transport } from "./http.ts";
import { Execution, type ExecutionResult } from "./execution.ts";
import { Model } from "./model.ts";
import type { TensorValues } from "./tensor.ts";
import type { ModelInfo, ModelSignature } from "./types.ts";

/** Options of `NnClient.compile` (API.md `POST /v1/compilations`). */
export interface CompileOptions {
  preference?: "LOW_POWER" | "FAST_SINGLE_ANSWER" | "SUSTAINED_SPEED";
  priority?: "LOW" | "MEDIUM" | "HIGH";
  /** Device names; by default the service chooses among all its devices. */
  devices?: readonly string[];
  /** Fails with MISSED_DEADLINE_* when preparation takes longer. */
  deadlineMs?: number;
  /** A 32-byte token (or its base64) selecting this client's compilation cache entry. */
  cache?: { token: Uint8Array | string };
}

/** What the service reports of a created compilation. */
export interface CompilationInfo {
  id: string;
  model: string;
  cache: "hit" | "miss" | "none";
  prepareMs: number;
  [field: string]: unknown;
}

/** Options of `Compilation.compute`. */
export interface ComputeOptions {
  measureTiming?: boolean;
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

  /** Releases the compilation on the service. */
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
    ...(token !== undefined
      ? { cache: { token: typeof token === "string" ? token : toBase64(token) } }
      : {}),
  });
  return new Compilation(transport, info, signature);
}
