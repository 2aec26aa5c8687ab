/**
 * The executors' one thread budget (`NNSERVE_THREADS`), shared with them through a
 * SharedArrayBuffer (`kernels/compute_lanes.ts` reads it on their side): each running
 * execution holds its executor's thread, and its large kernel calls borrow the rest as
 * compute lanes while they are free.
 */
import {
  countRunning,
  type ShareCounters,
  type ThreadBudget,
} from "../../../kernels/compute_lanes.ts";

/** The pool's side of the thread budget of `slots` executors sharing `threads` threads. */
export class PoolThreads {
  /**
   * [free threads, lanes held by each slot's executor..., each slot's epoch..., executions
   * running, the most running at once lately, when that was seen] (a slot's epoch changes
   * when its executor is terminated: its lanes end).
   */
  readonly #counters: Int32Array;
  readonly #share: ShareCounters;
  readonly #maxLanes: number;
  /** Executor slots (fixed: the counters' layout depends on it). */
  readonly #slots: number;

  constructor(slots: number, threads: number) {
    this.#slots = slots;
    this.#counters = new Int32Array(new SharedArrayBuffer(4 * (4 + 2 * slots)));
    // After the free count and every slot's two counters.
    const runningIndex = 1 + 2 * slots;
    this.#share = {
      threads: Math.max(1, threads),
      runningIndex,
      peakIndex: runningIndex + 1,
      peakAtIndex: runningIndex + 2,
      epochMs: Date.now(),
    };
    this.#counters[0] = this.#share.threads;
    this.#maxLanes = Math.max(0, threads - 1);
  }

  /** Threads free right now. */
  get free(): number {
    return Atomics.load(this.#counters, 0);
  }

  /** Executions running in the executors right now. */
  get running(): number {
    return Atomics.load(this.#counters, this.#share.runningIndex);
  }

  /** One execution more (1) or less (-1) holds its executor's thread. */
  held(change: 1 | -1): void {
    Atomics.sub(this.#counters, 0, change);
    countRunning(this.#counters, this.#share, change);
  }

  /** The budget as the executor of slot `index` uses it. */
  forSlot(index: number): ThreadBudget {
    const held = 1 + index;
    return {
      counters: this.#counters,
      slot: held,
      epochIndex: held + this.#slots,
      maxLanes: this.#maxLanes,
      share: this.#share,
    };
  }

  /** The lanes of slot `index`'s executor end (it is being terminated). */
  endLanes(index: number): void {
    const { epochIndex } = this.forSlot(index);
    Atomics.add(this.#counters, epochIndex, 1);
    Atomics.notify(this.#counters, epochIndex);
  }

  /**
   * Slot `index`'s executor was terminated: its lanes end, and the threads it held go back
   * (the lanes it borrowed, and its own when `running`: it had an execution).
   */
  executorGone(index: number, running: boolean): void {
    this.endLanes(index);
    const { slot } = this.forSlot(index);
    Atomics.add(this.#counters, 0, Atomics.exchange(this.#counters, slot, 0));
    if (running) this.held(-1);
  }
}
