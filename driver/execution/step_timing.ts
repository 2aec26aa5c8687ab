/**
 * Per-step timing of a run: which device ran which operations for how long, added up per
 * plan step (consecutive operations on one device) or per operation when profiling.
 */
import type { PreparedStep, StepTiming } from "../compilation/plan.ts";

/**
 * Adds up the time of each plan step (consecutive operations on one device), only when a
 * caller asked for timing.
 */
export class StepClock {
  readonly #steps: readonly PreparedStep[];
  readonly #timing: StepTiming[] | undefined;
  /** Keep each host operation's time apart (profiling) instead of adding up plan steps. */
  readonly #perOperation: boolean;
  /** Where the next step's time begins: the run's start, then each step's end. */
  #started = 0;

  /**
   * A clock adding to a run's `timing` (when asked for), per operation when `perOperation`,
   * started at `startedAt` (`performance.now()`; now by default).
   */
  constructor(
    steps: readonly PreparedStep[],
    run: { timing?: StepTiming[]; perOperation?: boolean; startedAt?: number },
  ) {
    this.#steps = steps;
    this.#timing = run.timing;
    this.#perOperation = run.perOperation ?? false;
    if (run.timing) this.#started = run.startedAt ?? performance.now();
  }

  /**
   * Starts the next step's time now, leaving out what passed since the last step ended (a
   * wait no step is charged for: preparing a device unit). Steps that follow one another
   * need no start: each begins where the one before it ended (one clock read a step).
   */
  restart(): void {
    if (this.#timing) this.#started = performance.now();
  }

  /**
   * Charges the time since the last step ended (or the clock started) to steps [step, step +
   * count) on the plan's device, or on the fallback device that ran them instead and why
   * (`fallback`).
   */
  stop(
    step: number,
    count: number,
    fallback?: { device: string; reason: string },
  ): void {
    const timing = this.#timing;
    if (!timing) return;
    const device = fallback?.device ?? this.#steps[step].device;
    const now = performance.now();
    const us = (now - this.#started) * 1000;
    this.#started = now;
    const operations = new Array<number>(count);
    for (let k = 0; k < count; k++) operations[k] = this.#steps[step + k].operation;
    const last = timing[timing.length - 1];
    const sameRun = !this.#perOperation && last && last.device === device && step > 0 &&
      this.#steps[step - 1].device === this.#steps[step].device &&
      last.fallback === fallback?.reason;
    if (sameRun) {
      last.operations.push(...operations);
      last.onDeviceUs += us;
    } else {
      timing.push({
        device,
        operations,
        onDeviceUs: us,
        ...(fallback ? { fallback: fallback.reason } : {}),
      });
    }
  }
}
