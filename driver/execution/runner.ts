/**
 * One synchronous execution of a live compilation (NNAPI `executeSynchronously`): arguments
 * checked and bound, small host-only plans run on the driver's thread, the rest on the
 * executor pool (queued, with the deadline counting), outputs delivered, every phase timed
 * for the metrics and the protocol's statistics.
 */
import type { BufferRegistry } from "../../memory/buffers.ts";
import type { MemoryPools } from "../../memory/pools.ts";
import { DriverError, type OutputShape } from "../../nnapi/errors.ts";
import {
  bindArguments,
  type BindingContext,
  type DeliveredOutput,
  deliverOutputs,
} from "./arguments.ts";
import { countExecution } from "../driver_metrics.ts";
import type { Compilations, LiveCompilation } from "../compilation/compilations.ts";
import { loopTimeoutMs } from "./control_flow/run.ts";
import { executionLabels, ExecutionSeries } from "./execution_metrics.ts";
import { Executable, type RunOptions } from "./executable.ts";
import {
  checkOutputArguments,
  checkOutputShapes,
  type ClientExecutionRequest,
  type ExecutionRequest,
  type ExecutionResult,
  positionalInputs,
  resolveInputs,
} from "./request.ts";
import type { ExecutorPool } from "./executors/pool.ts";
import { type MeasuredRun, runMeasured } from "./measured_run.ts";
import type { Metrics } from "../../metrics/metrics.ts";
import { type PreparedModel, type RunInput, runsOnHost } from "../compilation/plan.ts";
import { estimateWork } from "../compilation/work_estimate.ts";
import { DynamicBatcher } from "./dynamic_batcher.ts";
import { InputArrays } from "./input_arrays.ts";

/** A plan bound on the driver's thread, and the input arrays its runs reuse. */
interface InlinePlan {
  executable: Executable;
  inputs: InputArrays;
}

/** Runs executions with the driver's parts. */
export class ExecutionRunner {
  readonly #compilations: Compilations;
  readonly #pool: ExecutorPool;
  readonly #memories: MemoryPools;
  readonly #buffers: BufferRegistry;
  readonly #metrics: Metrics;
  /** Plans of at most this many estimated multiply-adds run on the driver's own thread. */
  readonly #inlineWork: number;
  /**
   * Plans bound on the driver's thread, and the input arrays their runs reuse, by live
   * compilation (dropped with it).
   */
  readonly #inline = new WeakMap<LiveCompilation, InlinePlan>();
  /** The batchers of compilations with dynamic batching, by live compilation. */
  readonly #batchers = new WeakMap<LiveCompilation, DynamicBatcher>();
  /** The metrics series of live compilations, by client. */
  readonly #series = new WeakMap<LiveCompilation, Map<string, ExecutionSeries>>();
  #batchQueued = 0;

  constructor(parts: {
    compilations: Compilations;
    pool: ExecutorPool;
    memories: MemoryPools;
    buffers: BufferRegistry;
    metrics: Metrics;
    inlineWork: number;
  }) {
    this.#compilations = parts.compilations;
    this.#pool = parts.pool;
    this.#memories = parts.memories;
    this.#buffers = parts.buffers;
    this.#metrics = parts.metrics;
    this.#inlineWork = parts.inlineWork;
  }

  /** The plan of a live compilation bound on the driver's thread, once, and its inputs. */
  #inlinePlan(live: LiveCompilation, prepared: PreparedModel): InlinePlan {
    let plan = this.#inline.get(live);
    if (!plan) {
      plan = { executable: new Executable(prepared), inputs: new InputArrays() };
      this.#inline.set(live, plan);
    }
    return plan;
  }

  /** The series executions of a live compilation by `owner` record into, found once. */
  #seriesOf(owner: string, live: LiveCompilation): ExecutionSeries {
    let byClient = this.#series.get(live);
    if (!byClient) this.#series.set(live, byClient = new Map());
    let series = byClient.get(owner);
    if (!series) {
      series = new ExecutionSeries(this.#metrics, executionLabels(owner, live.record));
      byClient.set(owner, series);
    }
    return series;
  }

  /** Executions waiting for their batch to form, of every compilation. */
  get batchQueued(): number {
    return this.#batchQueued;
  }

  /** The batcher of a live compilation with `batching`, made on first use. */
  #batcher(
    owner: string,
    id: string,
    live: LiveCompilation,
    prepared: PreparedModel,
    series: ExecutionSeries,
  ): DynamicBatcher {
    let batcher = this.#batchers.get(live);
    if (!batcher) {
      batcher = new DynamicBatcher(live.record.batching!, {
        slots: this.#pool.size,
        run: (inputs, options) =>
          this.#pool.run(id, prepared, inputs, {
            client: owner,
            priority: live.record.priority,
            ...options,
          }),
        observe: (rows, delaysUs) => series.observeBatch(rows, delaysUs),
        queueChanged: (delta) => this.#batchQueued += delta,
      });
      this.#batchers.set(live, batcher);
    }
    return batcher;
  }

  /**
   * Runs one execution of compilation `id` for `owner` (its live compilation, or the promise
   * of it), timed by phase for the metrics and counted by outcome. One async function from
   * the driver's call to the result: each awaited layer costs a small execution about half a
   * microsecond under load, and only what is pending is awaited.
   */
  async run(
    owner: string,
    id: string,
    found: LiveCompilation | Promise<LiveCompilation>,
    clientRequest: ClientExecutionRequest,
  ): Promise<ExecutionResult> {
    let series: ExecutionSeries | undefined;
    let started = 0;
    try {
      const live = found instanceof Promise ? await found : found;
      started = performance.now();
      series = this.#seriesOf(owner, live);
      const { record } = live;
      const request: ExecutionRequest = {
        ...clientRequest,
        inputs: positionalInputs(
          { names: record.inputNames, scalars: record.scalarInputs },
          clientRequest.inputs,
        ),
      };
      const prepared = live.prepared ?? await this.#compilations.complete(live);
      checkOutputArguments(prepared, request);
      const context: BindingContext = {
        owner,
        compilation: id,
        prepared,
        pools: this.#memories,
        buffers: this.#buffers,
      };
      // Awaited only when it is a promise: most requests refer to no memory nor buffer.
      const binding = bindArguments(context, request);
      const bound = binding instanceof Promise ? await binding : binding;
      let result: ExecutionResult;
      let done: number;
      try {
        const running = this.#start(owner, id, live, prepared, bound.request, started, series);
        const { inputUs, outputs, onDeviceUs, steps, queuedUs = 0 } = running instanceof Promise
          ? await running
          : running;
        const outputShapes = checkOutputShapes(outputs, bound.capacities);
        const delivering = performance.now();
        const delivery = deliverOutputs(context, bound, outputs);
        const delivered = delivery instanceof Promise ? await delivery : delivery;
        done = performance.now();
        series.observeRun({ queuedUs, steps, inputUs, outputUs: (done - delivering) * 1000 });
        const inDriverUs = Math.max(onDeviceUs, Math.round((done - started) * 1000));
        result = answered(record, delivered, outputShapes);
        if (request.measureTiming) result.timing = { onDeviceUs, inDriverUs, steps };
      } finally {
        bound.release();
      }
      series.observeOutcome(started, true, done);
      countExecution(this.#metrics);
      return result;
    } catch (error) {
      series?.observeOutcome(started, false);
      countExecution(this.#metrics, error);
      throw error;
    }
  }

  /**
   * Decodes the inputs and starts the run: a small host-only plan runs here at once (its
   * result returned as it is), others on the executor pool, through the batcher when the
   * compilation batches.
   */
  #start(
    owner: string,
    id: string,
    live: LiveCompilation,
    prepared: PreparedModel,
    request: ExecutionRequest,
    started: number,
    series: ExecutionSeries,
  ): StartedRun | Promise<StartedRun> {
    const { record } = live;
    // Only plans of known, small work run on this thread, where nothing could stop them.
    const work = estimateWork(prepared);
    const inlinePlan = !record.batching && work !== undefined && work <= this.#inlineWork &&
        runsOnHost(prepared)
      ? this.#inlinePlan(live, prepared)
      : undefined;
    // From here to the run's outputs nothing waits when it runs here: no other run can
    // touch the input arrays it reuses meanwhile.
    const inputs = resolveInputs(prepared, request, inlinePlan?.inputs);
    const resolved = performance.now();
    const inputUs = (resolved - started) * 1000;
    // Epoch ms, counted from the request's start (loading and binding count too).
    const deadline = request.deadlineMs === undefined
      ? undefined
      : Date.now() - (resolved - started) + request.deadlineMs;
    if (deadline !== undefined && Date.now() >= deadline) {
      throw new DriverError(
        "MISSED_DEADLINE_TRANSIENT",
        "the deadline passed before the execution started",
      );
    }
    const loopTimeout = loopTimeoutMs(request.loopTimeoutMs);
    if (inlinePlan) {
      const { outputs, onDeviceUs, steps } = inlineRun(inlinePlan, inputs, {
        limits: { loopTimeoutMs: loopTimeout, deadline },
        startedAt: resolved,
      });
      return { outputs, onDeviceUs, steps, inputUs };
    }
    const running = record.batching
      ? this.#batcher(owner, id, live, prepared, series).run(inputs, {
        deadline,
        loopTimeoutMs: loopTimeout,
      })
      : this.#pool.run(id, prepared, inputs, {
        client: owner,
        priority: record.priority,
        deadline,
        loopTimeoutMs: loopTimeout,
      });
    return running.then((run) => ({ ...run, inputUs }));
  }
}

/** A run as it ended, with the time its inputs took to decode and how long it queued. */
type StartedRun = MeasuredRun & { queuedUs?: number; inputUs: number };

/**
 * An execution's answer from its delivered outputs: named as the model's outputs are, ONNX
 * scalars (carried as [1]) answered as the scalars they are.
 */
function answered(
  record: LiveCompilation["record"],
  delivered: DeliveredOutput[],
  outputShapes: OutputShape[],
): ExecutionResult {
  const names = record.outputNames;
  const scalars = record.scalarOutputs;
  const scalar = (k: number) => scalars!.includes(k);
  const shaped = scalars?.length
    ? delivered.map((o, k) => scalar(k) ? { ...o, shape: [] } : o)
    : delivered;
  return {
    outputs: names ? shaped.map((o, i) => ({ ...o, name: names[i] })) : shaped,
    outputShapes: scalars?.length
      ? outputShapes.map((o, k) => scalar(k) ? { ...o, dimensions: [] } : o)
      : outputShapes,
  };
}

/**
 * A measured run on the driver's thread, whose inputs are arrays its plan keeps for the next
 * run: an output that is one of them (a model output that is also its input) is copied.
 */
function inlineRun(
  plan: InlinePlan,
  inputs: readonly RunInput[],
  options: Omit<RunOptions, "timing">,
): MeasuredRun {
  const run = runMeasured(plan.executable, inputs, options);
  if (!run.outputs.some((o) => plan.inputs.holds(o.data))) return run;
  const outputs = run.outputs.map((o) =>
    plan.inputs.holds(o.data) ? { ...o, data: o.data!.slice() } : o
  );
  return { ...run, outputs };
}
