/**
 * A pool of executor workers, so that kernels never block the server's event loop and
 * executions of one compilation can run in parallel. Each worker caches the plans it has
 * seen (constants are shared through SharedArrayBuffer, not copied). A worker that overruns
 * an execution's deadline or dies is replaced.
 */
import { DriverError, type DriverErrorDetails, type ErrorStatus } from "../nnapi/errors.ts";
import type { RunInput, RunOutput } from "./executable.ts";
import type { PreparedModel } from "./prepared_model.ts";
import { toBytes } from "../nnapi/tensor.ts";

/** Messages to a worker. */
export type WorkerRequest =
  | {
    kind: "run";
    id: number;
    compilation: string;
    prepared?: PreparedModel;
    inputs: RunInput[];
  }
  | { kind: "unload"; compilation: string };

/** Messages from a worker. */
export type WorkerResponse =
  | { kind: "result"; id: number; outputs: RunOutput[]; onDeviceUs: number }
  | {
    kind: "error";
    id: number;
    status: ErrorStatus;
    message: string;
    details: DriverErrorDetails;
  };

/** What a finished run reports. */
export interface PoolResult {
  outputs: RunOutput[];
  onDeviceUs: number;
}

/** Scheduling priority of NNAPI `Priority`: higher runs first when workers are busy. */
export type Priority = "LOW" | "MEDIUM" | "HIGH";

const PRIORITY_RANK: Record<Priority, number> = { HIGH: 0, MEDIUM: 1, LOW: 2 };

interface Job {
  id: number;
  compilation: string;
  prepared: PreparedModel;
  inputs: RunInput[];
  priority: Priority;
  deadline?: number;
  resolve(result: PoolResult): void;
  reject(error: Error): void;
}

interface Slot {
  worker: Worker;
  loaded: Set<string>;
  job?: Job;
  timer?: ReturnType<typeof setTimeout>;
}

/** Runs prepared models on a fixed number of workers with a priority queue. */
export class ExecutorPool {
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  #nextId = 1;
  #closed = false;

  constructor(size: number) {
    for (let i = 0; i < Math.max(1, size); i++) this.#slots.push(this.#spawn());
  }

  /** Number of executions waiting for a worker. */
  get queued(): number {
    return this.#queue.length;
  }

  /** Runs one execution; rejects with MISSED_DEADLINE_* when `deadline` (epoch ms) passes. */
  run(
    compilation: string,
    prepared: PreparedModel,
    inputs: RunInput[],
    options: { priority: Priority; deadline?: number },
  ): Promise<PoolResult> {
    if (this.#closed) {
      return Promise.reject(new DriverError("DEVICE_UNAVAILABLE", "the executor is shut down"));
    }
    return new Promise((resolve, reject) => {
      const job: Job = {
        id: this.#nextId++,
        compilation,
        prepared,
        inputs,
        priority: options.priority,
        deadline: options.deadline,
        resolve,
        reject,
      };
      let at = this.#queue.findIndex((j) =>
        PRIORITY_RANK[j.priority] > PRIORITY_RANK[job.priority]
      );
      if (at < 0) at = this.#queue.length;
      this.#queue.splice(at, 0, job);
      this.#dispatch();
    });
  }

  /** Forgets a compilation's plan in every worker. */
  unload(compilation: string): void {
    for (const slot of this.#slots) {
      if (slot.loaded.delete(compilation)) {
        slot.worker.postMessage({ kind: "unload", compilation } satisfies WorkerRequest);
      }
    }
  }

  /** Stops every worker; queued and running executions fail. */
  close(): void {
    this.#closed = true;
    const failure = new DriverError("DEVICE_UNAVAILABLE", "the executor is shut down");
    for (const job of this.#queue.splice(0)) job.reject(failure);
    for (const slot of this.#slots) {
      clearTimeout(slot.timer);
      slot.job?.reject(failure);
      slot.worker.terminate();
    }
  }

  #spawn(): Slot {
    const worker = new Worker(new URL("./executor_worker.ts", import.meta.url).href, {
      type: "module",
    });
    const slot: Slot = { worker, loaded: new Set() };
    worker.onmessage = (event: MessageEvent<WorkerResponse>) => this.#finish(slot, event.data);
    worker.onerror = (event) => {
      event.preventDefault();
      this.#replace(slot, new DriverError("GENERAL_FAILURE", `executor failed: ${event.message}`));
    };
    return slot;
  }

  #replace(slot: Slot, failure: DriverError): void {
    clearTimeout(slot.timer);
    const job = slot.job;
    slot.worker.terminate();
    const index = this.#slots.indexOf(slot);
    if (index >= 0 && !this.#closed) this.#slots[index] = this.#spawn();
    job?.reject(failure);
    this.#dispatch();
  }

  #dispatch(): void {
    for (const slot of this.#slots) {
      if (slot.job || this.#queue.length === 0) continue;
      const job = this.#queue.shift()!;
      const now = Date.now();
      if (job.deadline !== undefined && now >= job.deadline) {
        job.reject(new DriverError("MISSED_DEADLINE_TRANSIENT", "the deadline passed in queue"));
        continue;
      }
      slot.job = job;
      const needsPlan = !slot.loaded.has(job.compilation);
      slot.loaded.add(job.compilation);
      const transfer = job.inputs.flatMap((i) =>
        i.data && !(i.data.buffer instanceof SharedArrayBuffer)
          ? [toBytes(i.data).buffer as ArrayBuffer]
          : []
      );
      slot.worker.postMessage(
        {
          kind: "run",
          id: job.id,
          compilation: job.compilation,
          prepared: needsPlan ? job.prepared : undefined,
          inputs: job.inputs,
        } satisfies WorkerRequest,
        [...new Set(transfer)],
      );
      if (job.deadline !== undefined) {
        slot.timer = setTimeout(() => {
          this.#replace(
            slot,
            new DriverError("MISSED_DEADLINE_TRANSIENT", "the execution overran its deadline"),
          );
        }, job.deadline - now);
      }
    }
  }

  #finish(slot: Slot, response: WorkerResponse): void {
    const job = slot.job;
    if (!job || job.id !== response.id) return;
    clearTimeout(slot.timer);
    slot.job = undefined;
    if (response.kind === "result") {
      job.resolve({ outputs: response.outputs, onDeviceUs: response.onDeviceUs });
    } else {
      job.reject(new DriverError(response.status, response.message, response.details));
    }
    this.#dispatch();
  }
}
