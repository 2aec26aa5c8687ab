/**
 * Dynamic batching (Triton's dynamic batcher) of one compilation: executions arriving
 * together are stacked along their inputs' first extent (the batch) into one run of the
 * plan, and each gets its own rows of the outputs back.
 *
 * Batches form while the executors are busy: at most as many batched runs are in flight as
 * there are executors, and when one finishes the next takes up to `maxBatchSize` rows from
 * the queue. When an executor is free and the queue holds less than a full batch, the
 * oldest execution waits at most `maxQueueDelayUs` for others; reaching `maxBatchSize`
 * dispatches at once. A run's rows are padded with zero rows up to the next of a few sizes
 * and the padding's outputs dropped: a plan whose extents come at execution is bound per
 * shape, and few shapes stay bound. The sizes are the preferred ones; by default every size
 * when there are no more than the bindings an executable keeps, else powers of two.
 *
 * Only executions whose inputs agree in every extent but the first are stacked (each shape
 * signature waits for its own batch). Each execution keeps its own deadline: it is answered
 * MISSED_DEADLINE_TRANSIENT when its deadline passes, queued or while its batch runs (the
 * batch runs on for the others, to the latest of their deadlines). A batched run that fails
 * is run again one execution at a time, so an error belongs to the execution that causes it.
 */
import { z } from "zod";
import { DriverError } from "../../nnapi/errors.ts";
import type { TensorData } from "../../nnapi/tensor.ts";
import type { RunInput, RunOutput } from "../compilation/plan.ts";
import type { BatchingConfig } from "../../store/compilation_store.ts";
import type { PoolResult } from "./executors/pool.ts";
import { rowsOf, stackLater } from "./stacked_inputs.ts";
import { callAt, startPreciseTimer } from "./precise_timer/mod.ts";
import { MAX_SHAPE_BINDINGS } from "./shape_bindings.ts";

/**
 * A batching request as clients write it (`batching` on `POST /v1/compilations`, and in a
 * repository entry's `config.json`).
 */
export const BatchingSchema = z.object({
  maxBatchSize: z.number().int().min(1).max(4096).describe(
    "rows (the inputs' first extent, summed over the executions) of one run at most",
  ),
  preferredBatchSizes: z.array(z.number().int().min(1).max(4096)).max(16).optional().describe(
    "the sizes runs take, each at most maxBatchSize: a batch is padded with zero rows up to " +
      "the next of them or maxBatchSize (default: every size up to a maxBatchSize of 8, " +
      "powers of two beyond)",
  ),
  maxQueueDelayUs: z.number().int().min(0).max(10_000_000).describe(
    "how long the oldest queued execution waits for others while an executor is free (µs)",
  ),
  maxQueueSize: z.number().int().min(1).max(100_000).optional().describe(
    "executions waiting for a batch at most (default 64); more are refused with 429",
  ),
}).strict() satisfies z.ZodType<BatchingConfig>;

/** Default of `maxQueueSize`: as many executions as one client may queue for executors. */
export const DEFAULT_BATCH_QUEUE_SIZE = 64;

/** What a run of the plan is given besides its inputs. */
export interface RunOptions {
  /** Epoch ms. */
  deadline?: number;
  loopTimeoutMs?: number;
  /** Given a batched run's inputs as the executor stacked them (`stacked_inputs.ts`). */
  onStackedInputs?: (inputs: RunInput[]) => void;
}

/** What the batcher is given: a run of the plan, and hooks for the metrics. */
export interface BatchRunner {
  run(inputs: RunInput[], options: RunOptions): Promise<PoolResult>;
  /** Batched runs in flight at most (the executors). */
  slots: number;
  /** Told of each run: its rows, and the queue delay of each execution in it (µs). */
  observe?(rows: number, delaysUs: readonly number[]): void;
  /** Told when executions join (+) or leave (-) the queue. */
  queueChanged?(delta: number): void;
}

interface Queued {
  inputs: RunInput[];
  /** Its shape signature: every input's extents but the first. */
  signature: string;
  rows: number;
  deadline?: number;
  loopTimeoutMs?: number;
  arrivedAt: number;
  timer?: ReturnType<typeof setTimeout>;
  settled: boolean;
  resolve(result: PoolResult): void;
  reject(error: Error): void;
}

/** Errors of a run as a whole (of the service's state, not of the data): not run again. */
const WHOLE_RUN_FAILURES = new Set([
  "MISSED_DEADLINE_TRANSIENT",
  "MISSED_DEADLINE_PERSISTENT",
  "RESOURCE_EXHAUSTED_TRANSIENT",
  "RESOURCE_EXHAUSTED_PERSISTENT",
  "DEVICE_UNAVAILABLE",
]);

/** The batcher of one compilation. */
export class DynamicBatcher {
  readonly #config: BatchingConfig;
  readonly #runner: BatchRunner;
  readonly #queue: Queued[] = [];
  /** The rows a run takes: a batch is padded with zero rows up to the next of these. */
  readonly #sizes: readonly number[];
  #inFlight = 0;
  /** When the pending wake-up (for the oldest execution's queue delay) is due, and its cancel. */
  #wakeAt = Infinity;
  #cancelWake: (() => void) | undefined;

  constructor(config: BatchingConfig, runner: BatchRunner) {
    this.#config = config;
    this.#runner = runner;
    this.#sizes = batchSizes(config);
    if (config.maxQueueDelayUs > 0) startPreciseTimer();
  }

  /**
   * Runs one execution's inputs, stacked with others when it can be (every input a tensor
   * of the same first extent, at most `maxBatchSize`), else alone.
   */
  run(inputs: RunInput[], options: RunOptions): Promise<PoolResult> {
    const { deadline } = options;
    const rows = batchRows(inputs);
    if (rows === undefined || rows > this.#config.maxBatchSize) {
      return this.#runner.run(inputs, options);
    }
    const limit = this.#config.maxQueueSize ?? DEFAULT_BATCH_QUEUE_SIZE;
    if (this.#queue.length >= limit) {
      return Promise.reject(
        new DriverError(
          "RESOURCE_EXHAUSTED_TRANSIENT",
          `the batch queue of this compilation is full (${limit} executions waiting); ` +
            "retry later",
          { retryAfterSeconds: 1, limit: "batch_queue" },
        ),
      );
    }
    if (deadline !== undefined && Date.now() >= deadline) {
      return Promise.reject(missedDeadline("the deadline passed before the execution started"));
    }
    return new Promise((resolve, reject) => {
      const entry: Queued = {
        inputs,
        signature: inputs.map((input) => input.shape.slice(1).join("x")).join("|"),
        rows,
        deadline,
        loopTimeoutMs: options.loopTimeoutMs,
        arrivedAt: performance.now(),
        settled: false,
        resolve,
        reject,
      };
      if (deadline !== undefined) {
        entry.timer = setTimeout(() => this.#expire(entry), deadline - Date.now());
      }
      this.#queue.push(entry);
      this.#runner.queueChanged?.(1);
      this.#pump();
    });
  }

  /** An execution's deadline passed: answered now, queued or in a running batch. */
  #expire(entry: Queued): void {
    const at = this.#queue.indexOf(entry);
    if (at >= 0) {
      this.#queue.splice(at, 1);
      this.#runner.queueChanged?.(-1);
    }
    settle(entry, () =>
      entry.reject(
        missedDeadline(
          at >= 0
            ? "the deadline passed while the execution waited for a batch"
            : "the execution's batch overran its deadline",
        ),
      ));
  }

  /** Dispatches the batches the free slots and the queue allow, or waits for more. */
  #pump(): void {
    while (this.#inFlight < this.#runner.slots && this.#queue.length > 0) {
      const oldest = this.#queue[0];
      const same = this.#queue.filter((e) => e.signature === oldest.signature);
      const rows = same.reduce((sum, e) => sum + e.rows, 0);
      const dueAt = oldest.arrivedAt + this.#config.maxQueueDelayUs / 1000;
      if (rows < this.#config.maxBatchSize && performance.now() < dueAt) {
        this.#wakeUpAt(dueAt);
        return;
      }
      const batch = this.#take(same);
      for (const entry of batch) this.#queue.splice(this.#queue.indexOf(entry), 1);
      this.#runner.queueChanged?.(-batch.length);
      this.#inFlight++;
      this.#runBatch(batch).finally(() => {
        this.#inFlight--;
        this.#pump();
      });
    }
  }

  /** The executions of one signature a batch takes: in arrival order, up to the most rows. */
  #take(same: Queued[]): Queued[] {
    const batch: Queued[] = [];
    let taken = 0;
    for (const entry of same) {
      if (taken + entry.rows > this.#config.maxBatchSize) continue;
      batch.push(entry);
      taken += entry.rows;
    }
    return batch;
  }

  /**
   * Pumps again at `at`, when the oldest execution's queue delay ends. On the precise timer:
   * Deno's own timers fire 1-2 ms late, more than a queue delay may be.
   */
  #wakeUpAt(at: number): void {
    if (this.#wakeAt <= at) return;
    this.#cancelWake?.();
    this.#wakeAt = at;
    this.#cancelWake = callAt(at, () => {
      this.#wakeAt = Infinity;
      this.#cancelWake = undefined;
      this.#pump();
    });
  }

  async #runBatch(batch: Queued[]): Promise<void> {
    const now = performance.now();
    if (batch.length === 1) {
      this.#runner.observe?.(batch[0].rows, [(now - batch[0].arrivedAt) * 1000]);
      return await this.#runAlone(batch[0], now);
    }
    const deadlines = batch.map((e) => e.deadline);
    const loopTimeouts = batch.map((e) => e.loopTimeoutMs);
    const options: RunOptions = {
      deadline: deadlines.includes(undefined) ? undefined : Math.max(...deadlines as number[]),
      loopTimeoutMs: loopTimeouts.includes(undefined)
        ? undefined
        : Math.max(...loopTimeouts as number[]),
    };
    const rows = batch.map((e) => e.rows);
    const taken = rows.reduce((a, b) => a + b, 0);
    const padded = this.#sizes.find((size) => size >= taken) ?? taken;
    this.#runner.observe?.(padded, batch.map((e) => (now - e.arrivedAt) * 1000));
    let result: PoolResult;
    let given: RunInput[] | undefined;
    try {
      result = await this.#runner.run(stackLater(batch.map((e) => e.inputs), padded), {
        ...options,
        onStackedInputs: (inputs) => given = inputs,
      });
    } catch (error) {
      if (error instanceof DriverError && WHOLE_RUN_FAILURES.has(error.status)) {
        for (const entry of batch) settle(entry, () => entry.reject(error as Error));
        return;
      }
      return await this.#runEachAlone(batch, given, now, error as Error);
    }
    const parts = splitOutputs(result.outputs, rows, padded);
    if (!parts) {
      // An output whose first extent is not the batch's: nothing to split by.
      return await this.#runEachAlone(batch, given, now);
    }
    batch.forEach((entry, k) => {
      const queuedUs = Math.round((now - entry.arrivedAt) * 1000) + result.queuedUs;
      settle(
        entry,
        () => entry.resolve({ ...result, outputs: parts[k], queuedUs }),
      );
    });
  }

  /**
   * Runs each execution of a batch again on its own. Its blocks went to the executor with
   * the batch: it runs on its rows of the stacked inputs that came back (`given`); when none
   * came back (the executor failed), the batch's error is each one's.
   */
  async #runEachAlone(
    batch: Queued[],
    given: RunInput[] | undefined,
    dispatchedAt: number,
    error: Error = new DriverError("GENERAL_FAILURE", "the batched run's inputs were lost"),
  ): Promise<void> {
    if (given) {
      const own = rowsOf(given, batch.map((e) => e.rows));
      batch.forEach((entry, k) => entry.inputs = own[k]);
    } else if (batch.some((e) => e.inputs.some(detached))) {
      for (const entry of batch) settle(entry, () => entry.reject(error));
      return;
    }
    await Promise.all(batch.map((entry) => this.#runAlone(entry, dispatchedAt)));
  }

  async #runAlone(entry: Queued, dispatchedAt: number): Promise<void> {
    if (entry.settled) return;
    try {
      const result = await this.#runner.run(entry.inputs, {
        deadline: entry.deadline,
        loopTimeoutMs: entry.loopTimeoutMs,
      });
      const queuedUs = Math.round((dispatchedAt - entry.arrivedAt) * 1000) + result.queuedUs;
      settle(entry, () => entry.resolve({ ...result, queuedUs }));
    } catch (error) {
      settle(entry, () => entry.reject(error as Error));
    }
  }
}

function settle(entry: Queued, answer: () => void): void {
  if (entry.settled) return;
  entry.settled = true;
  clearTimeout(entry.timer);
  answer();
}

function missedDeadline(message: string): DriverError {
  return new DriverError("MISSED_DEADLINE_TRANSIENT", message);
}

/**
 * The batch rows of an execution: the first extent its inputs share, or undefined when it
 * cannot be stacked (an omitted input, a scalar, or inputs disagreeing on it).
 */
export function batchRows(inputs: readonly RunInput[]): number | undefined {
  let rows: number | undefined;
  for (const input of inputs) {
    if (!input.data || input.shape.length === 0) return undefined;
    if (rows !== undefined && input.shape[0] !== rows) return undefined;
    rows = input.shape[0];
  }
  return rows !== undefined && rows > 0 ? rows : undefined;
}

/** Whether an input's bytes went elsewhere (transferred to an executor). */
function detached(input: RunInput): boolean {
  const buffer = input.data?.buffer;
  return buffer instanceof ArrayBuffer && buffer.detached;
}

/**
 * The run sizes of a batching config, ascending: its preferred sizes and `maxBatchSize`.
 * Without preferred sizes, every size from 1 when the executable keeps a binding for each
 * (`maxBatchSize` at most {@link MAX_SHAPE_BINDINGS}): padding would be work thrown away
 * (MobileNetV2 at 16 clients: batching 0.95x of off padded to powers of two, 1.07x unpadded,
 * for 10% more memory in the server); beyond, the powers of two below `maxBatchSize`.
 */
export function batchSizes(config: BatchingConfig): number[] {
  const { maxBatchSize, preferredBatchSizes } = config;
  const sizes = new Set([maxBatchSize]);
  if (preferredBatchSizes) {
    for (const size of preferredBatchSizes) if (size <= maxBatchSize) sizes.add(size);
  } else if (maxBatchSize <= MAX_SHAPE_BINDINGS) {
    for (let size = 1; size < maxBatchSize; size++) sizes.add(size);
  } else {
    for (let size = 1; size < maxBatchSize; size *= 2) sizes.add(size);
  }
  return [...sizes].sort((a, b) => a - b);
}

/**
 * The outputs of a batched run of `total` rows split into each execution's rows (views of
 * the batch's data; padding rows after them are dropped), or undefined when an output's
 * first extent is not the batch's.
 */
export function splitOutputs(
  outputs: readonly RunOutput[],
  rows: readonly number[],
  total: number,
): RunOutput[][] | undefined {
  if (outputs.some((o) => o.shape.length === 0 || o.shape[0] !== total)) return undefined;
  const parts: RunOutput[][] = rows.map(() => []);
  for (const output of outputs) {
    const perRow = output.data.length / total;
    let row = 0;
    rows.forEach((count, k) => {
      parts[k].push({
        shape: [count, ...output.shape.slice(1)],
        data: output.data.subarray(row * perRow, (row + count) * perRow) as TensorData,
      });
      row += count;
    });
  }
  return parts;
}
