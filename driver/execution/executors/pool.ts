/**
 * A pool of executor workers, so that kernels never block the server's event loop and
 * executions of one compilation can run in parallel. Each worker caches the plans it has
 * seen (constants are shared through SharedArrayBuffer, not copied). An execution's deadline
 * holds from the moment it is queued: waiting, it is taken out of the queue when the
 * deadline passes; running, its worker is replaced. A worker that dies is replaced too.
 *
 * Constructing a Worker blocks the calling thread while the new isolate starts (tens of
 * milliseconds, more on a busy machine), so only the pool's first workers are built on the
 * server's thread, at start. Replacements come from the executor spawner
 * (`spawner.ts`), a worker that builds them on its own thread and keeps a warm
 * spare; every executor talks to the pool over a MessagePort of its own.
 */
import { DriverError, type Limit } from "../../../nnapi/errors.ts";
import type { RunInput, RunOutput } from "../../compilation/plan.ts";
import type { StepTiming, UnitArtifact } from "../../compilation/plan.ts";
import { loopTimeoutMs } from "../control_flow/run.ts";
import type { PreparedModel } from "../../compilation/plan.ts";
import type {
  ExecutorConnect,
  SpawnerRequest,
  SpawnerResponse,
  WorkerRequest,
  WorkerResponse,
} from "./protocol.ts";
import { toBytes } from "../../../nnapi/tensor.ts";
import { PoolThreads } from "./pool_threads.ts";

/** What a finished run reports. */
export interface PoolResult {
  outputs: RunOutput[];
  onDeviceUs: number;
  /** Time of each plan step. */
  steps: StepTiming[];
  /** Time it waited in the queue for a worker. */
  queuedUs: number;
  /** After `prepareOnly`: what the prepared units left for the compilation cache. */
  artifacts?: UnitArtifact[];
}

/** Scheduling priority of NNAPI `Priority`: higher runs first when workers are busy. */
export type Priority = "LOW" | "MEDIUM" | "HIGH";

const PRIORITY_RANK: Record<Priority, number> = { HIGH: 0, MEDIUM: 1, LOW: 2 };

/** Bounds of the executions waiting for a worker, in all and per client. */
export interface QueueLimits {
  total: number;
  perClient: number;
}

/** Defaults of NNSERVE_MAX_QUEUED and NNSERVE_MAX_QUEUED_PER_CLIENT. */
export const DEFAULT_QUEUE_LIMITS: QueueLimits = { total: 256, perClient: 64 };

interface Job {
  id: number;
  /** The client it runs for (queue limits are per client). */
  client: string;
  compilation: string;
  prepared: PreparedModel;
  inputs: RunInput[];
  priority: Priority;
  deadline?: number;
  /** Fires at the deadline, whether the job is still queued or already running. */
  timer?: ReturnType<typeof setTimeout>;
  /** When it was queued, and how long it waited for a worker (once it has one). */
  queuedAt: number;
  queuedUs?: number;
  resolve(result: PoolResult): void;
  reject(error: Error): void;
  perOperation?: boolean;
  prepareOnly?: boolean;
  /** NNAPI's loop timeout for the execution's WHILE loops (ms; default: NNAPI's). */
  loopTimeoutMs?: number;
  /** Given a batched run's stacked inputs back, before it settles. */
  onStackedInputs?: (inputs: RunInput[]) => void;
}

interface Slot {
  /** Where the executor listens; undefined until a spawned executor is handed over. */
  port?: MessagePort;
  /** Terminates the executor's worker. */
  stop(): void;
  /** The spawner's name for a spawned executor. */
  executor?: number;
  loaded: Set<string>;
  job?: Job;
  /** Compute lanes its executor reported ready. */
  lanes?: number;
}

const EXECUTOR_URL = new URL("./worker.ts", import.meta.url).href;
const SPAWNER_URL = new URL("./spawner.ts", import.meta.url).href;

/**
 * Runs prepared models on a fixed number of workers with a priority queue, sharing
 * `threads` kernel threads among them: each running execution counts one, and its large
 * kernel calls split across compute lanes while threads are free (`compute_lanes.ts`).
 */
export class ExecutorPool {
  readonly #slots: Slot[] = [];
  readonly #queue: Job[] = [];
  /** The threads the executors share. */
  readonly #threads: PoolThreads;
  #spawner: Worker;
  #nextId = 1;
  #nextExecutor = 1;
  #closed = false;

  /** Told how many kernel calls of each run were split across compute lanes (metrics). */
  readonly #onSplitCalls?: (count: number) => void;
  readonly #limits: QueueLimits;

  constructor(
    size: number,
    threads = size,
    onSplitCalls?: (count: number) => void,
    limits: QueueLimits = DEFAULT_QUEUE_LIMITS,
  ) {
    this.#onSplitCalls = onSplitCalls;
    this.#limits = limits;
    const slots = Math.max(1, size);
    this.#threads = new PoolThreads(slots, threads);
    this.#spawner = this.#startSpawner();
    for (let i = 0; i < slots; i++) this.#slots.push(this.#startHere(i));
  }

  /** Kernel threads free right now (tests read it: all of them once the pool is idle). */
  get freeThreads(): number {
    return this.#threads.free;
  }

  /** Executions running in the executors right now (tests read it: 0 once idle). */
  get running(): number {
    return this.#threads.running;
  }

  /** Executors (the most executions running at once). */
  get size(): number {
    return this.#slots.length;
  }

  /** Number of executions waiting for a worker. */
  get queued(): number {
    return this.#queue.length;
  }

  /**
   * The refusal of an execution of `client` that cannot wait for a worker now (every worker
   * busy and the queue full, in all or for this client), or undefined when it can wait.
   */
  #queueFull(client: string): DriverError | undefined {
    if (this.#slots.some((slot) => !slot.job && slot.port)) return undefined;
    const { total, perClient } = this.#limits;
    const refuse = (message: string, limit: Limit) =>
      new DriverError("RESOURCE_EXHAUSTED_TRANSIENT", message, { retryAfterSeconds: 1, limit });
    if (this.#queue.length >= total) {
      return refuse(
        `the execution queue is full (${total} executions waiting); retry later`,
        "queue",
      );
    }
    const mine = this.#queue.reduce((n, job) => n + (job.client === client ? 1 : 0), 0);
    if (mine >= perClient) {
      return refuse(
        `this client has ${perClient} executions waiting, its share of the queue; retry later`,
        "client_queue",
      );
    }
    return undefined;
  }

  /**
   * Runs one execution for `client`; rejects with MISSED_DEADLINE_TRANSIENT when `deadline`
   * (epoch ms) passes, at once if it already has, while queued or while running, and with
   * RESOURCE_EXHAUSTED_TRANSIENT (retry after a second) when it would wait in a full queue.
   */
  run(
    compilation: string,
    prepared: PreparedModel,
    inputs: RunInput[],
    options: {
      client: string;
      priority: Priority;
      deadline?: number;
      perOperation?: boolean;
      /** Only prepare the plan's device units; the result's steps are those that failed. */
      prepareOnly?: boolean;
      loopTimeoutMs?: number;
      /**
       * Given a batched run's inputs as the executor stacked them, before the run settles
       * (`stacked_inputs.ts`): the blocks themselves went to the executor.
       */
      onStackedInputs?: (inputs: RunInput[]) => void;
    },
  ): Promise<PoolResult> {
    if (this.#closed) {
      return Promise.reject(new DriverError("DEVICE_UNAVAILABLE", "the executor is shut down"));
    }
    if (options.deadline !== undefined && Date.now() >= options.deadline) {
      return Promise.reject(missedDeadline("the deadline passed before the execution started"));
    }
    const full = this.#queueFull(options.client);
    if (full) return Promise.reject(full);
    return new Promise((resolve, reject) => {
      const job: Job = {
        id: this.#nextId++,
        client: options.client,
        compilation,
        prepared,
        inputs,
        priority: options.priority,
        deadline: options.deadline,
        perOperation: options.perOperation,
        prepareOnly: options.prepareOnly,
        loopTimeoutMs: options.loopTimeoutMs,
        onStackedInputs: options.onStackedInputs,
        queuedAt: performance.now(),
        resolve,
        reject,
      };
      let at = this.#queue.findIndex((j) =>
        PRIORITY_RANK[j.priority] > PRIORITY_RANK[job.priority]
      );
      if (at < 0) at = this.#queue.length;
      this.#queue.splice(at, 0, job);
      if (job.deadline !== undefined) {
        job.timer = setTimeout(() => this.#expire(job), job.deadline - Date.now());
      }
      this.#dispatch();
    });
  }

  /** Forgets a compilation's plan in every worker. */
  unload(compilation: string): void {
    for (const slot of this.#slots) {
      if (slot.loaded.delete(compilation)) {
        slot.port?.postMessage({ kind: "unload", compilation } satisfies WorkerRequest);
      }
    }
  }

  /** Stops every worker; queued and running executions fail. */
  close(): void {
    this.#closed = true;
    this.#slots.forEach((_, index) => this.#threads.endLanes(index));
    const failure = new DriverError("DEVICE_UNAVAILABLE", "the executor is shut down");
    for (const job of this.#queue.splice(0)) {
      clearTimeout(job.timer);
      job.reject(failure);
    }
    for (const slot of this.#slots) {
      clearTimeout(slot.job?.timer);
      slot.job?.reject(failure);
      slot.port?.close();
      slot.stop();
    }
    this.#spawner.terminate(); // and with it every executor it spawned
  }

  /** An executor built on this thread (at start, before the server serves). */
  #startHere(index: number): Slot {
    const worker = new Worker(EXECUTOR_URL, { type: "module" });
    const slot: Slot = { stop: () => worker.terminate(), loaded: new Set() };
    worker.onerror = (event) => {
      event.preventDefault();
      this.#replace(slot, executorFailed(event.message));
    };
    const channel = new MessageChannel();
    worker.postMessage({ port: channel.port2 } satisfies ExecutorConnect, [channel.port2]);
    this.#connect(slot, channel.port1, index);
    return slot;
  }

  /** An executor from the spawner; it takes work once its port arrives. */
  #startSpawned(): Slot {
    const executor = this.#nextExecutor++;
    const slot: Slot = {
      executor,
      stop: () => {
        this.#spawner.postMessage({ kind: "terminate", executor } satisfies SpawnerRequest);
      },
      loaded: new Set(),
    };
    this.#spawner.postMessage({ kind: "spawn", executor } satisfies SpawnerRequest);
    return slot;
  }

  #startSpawner(): Worker {
    const spawner = new Worker(SPAWNER_URL, { type: "module" });
    spawner.onmessage = (event: MessageEvent<SpawnerResponse>) => {
      const response = event.data;
      const slot = this.#slots.find((s) => s.executor === response.executor);
      if (response.kind === "failed") {
        if (slot) this.#replace(slot, executorFailed(response.message));
      } else if (slot && !slot.port) {
        this.#connect(slot, response.port);
        this.#dispatch();
      } else {
        // Replaced or shut down meanwhile.
        response.port.close();
        spawner.postMessage({ kind: "terminate", executor: response.executor });
      }
    };
    spawner.onerror = (event) => {
      event.preventDefault();
      console.error(`nnserve: executor spawner failed (${event.message}); restarting it`);
      if (this.#closed) return;
      spawner.terminate();
      this.#spawner = this.#startSpawner();
      for (const slot of this.#slots) {
        if (slot.executor !== undefined) this.#replace(slot, executorFailed(event.message));
      }
    };
    return spawner;
  }

  /**
   * Serves `slot` on `port`, and has its executor start its compute lanes at once: they take
   * a second or so to start, and calls before that run on one thread.
   */
  #connect(slot: Slot, port: MessagePort, index = this.#slots.indexOf(slot)): void {
    slot.port = port;
    port.onmessage = (event: MessageEvent<WorkerResponse>) => {
      const response = event.data;
      if (response.kind === "warmed") slot.lanes = response.lanes;
      else this.#finish(slot, response);
    };
    const warm: WorkerRequest = { kind: "warm", threads: this.#threads.forSlot(index) };
    port.postMessage(warm);
  }

  /** Compute lanes ready across the executors (all of them once every lane has started). */
  get readyLanes(): number {
    return this.#slots.reduce((sum, slot) => sum + (slot.lanes ?? 0), 0);
  }

  /** A job's deadline passed: out of the queue, or its worker replaced if it is running. */
  #expire(job: Job): void {
    const queued = this.#queue.indexOf(job);
    if (queued >= 0) {
      this.#queue.splice(queued, 1);
      job.reject(missedDeadline("the deadline passed while the execution waited for a worker"));
      return;
    }
    const slot = this.#slots.find((s) => s.job === job);
    if (slot) this.#replace(slot, missedDeadline("the execution overran its deadline"));
  }

  #replace(slot: Slot, failure: DriverError): void {
    const job = slot.job;
    clearTimeout(job?.timer);
    slot.port?.close();
    slot.stop();
    const index = this.#slots.indexOf(slot);
    if (index >= 0) {
      this.#threads.executorGone(index, job !== undefined);
    }
    if (index >= 0 && !this.#closed) this.#slots[index] = this.#startSpawned();
    job?.reject(failure);
    this.#dispatch();
  }

  /** The next queued job whose deadline has not passed (expired ones are rejected). */
  #nextJob(): Job | undefined {
    for (let job = this.#queue.shift(); job; job = this.#queue.shift()) {
      if (job.deadline === undefined || Date.now() < job.deadline) return job;
      clearTimeout(job.timer);
      job.reject(missedDeadline("the deadline passed while the execution waited for a worker"));
    }
    return undefined;
  }

  #dispatch(): void {
    for (const [index, slot] of this.#slots.entries()) {
      if (slot.job || !slot.port) continue;
      const job = this.#nextJob();
      if (!job) return;
      slot.job = job;
      job.queuedUs = Math.round((performance.now() - job.queuedAt) * 1000);
      this.#threads.held(1);
      const needsPlan = !slot.loaded.has(job.compilation);
      slot.loaded.add(job.compilation);
      const transfer = job.inputs.flatMap((i) => i.stacked ?? (i.data ? [i.data] : []))
        .flatMap((data) =>
          data.buffer instanceof SharedArrayBuffer ? [] : [toBytes(data).buffer as ArrayBuffer]
        );
      slot.port.postMessage(
        {
          kind: "run",
          id: job.id,
          compilation: job.compilation,
          prepared: needsPlan ? job.prepared : undefined,
          inputs: job.inputs,
          perOperation: job.perOperation,
          prepareOnly: job.prepareOnly,
          // Loops stop themselves at the deadline; replacing the worker is the backstop.
          limits: { loopTimeoutMs: loopTimeoutMs(job.loopTimeoutMs), deadline: job.deadline },
          threads: this.#threads.forSlot(index),
        } satisfies WorkerRequest,
        [...new Set(transfer)],
      );
    }
  }

  #finish(slot: Slot, response: Exclude<WorkerResponse, { kind: "warmed" }>): void {
    const job = slot.job;
    if (!job || job.id !== response.id) return;
    clearTimeout(job.timer);
    slot.job = undefined;
    this.#threads.held(-1);
    if (response.stackedInputs) job.onStackedInputs?.(response.stackedInputs);
    if (response.kind === "result") {
      const { outputs, onDeviceUs, steps, splitCalls, artifacts } = response;
      if (splitCalls > 0) this.#onSplitCalls?.(splitCalls);
      job.resolve({
        outputs,
        onDeviceUs,
        steps,
        queuedUs: job.queuedUs ?? 0,
        ...(artifacts ? { artifacts } : {}),
      });
    } else {
      job.reject(new DriverError(response.status, response.message, response.details));
    }
    this.#dispatch();
  }
}

function missedDeadline(message: string): DriverError {
  return new DriverError("MISSED_DEADLINE_TRANSIENT", message);
}

function executorFailed(message: string): DriverError {
  return new DriverError("GENERAL_FAILURE", `executor failed: ${message}`);
}
