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
  #started = 0;

  constructor(
    steps: readonly PreparedStep[],
    timing: StepTiming[] | undefined,
    perOperation: boolean,
  ) {
    this.#steps = steps;
    this.#timing = timing;
    this.#perOperation = perOperation;
  }

  start(_step: number): void {
    if (this.#timing) this.#started = performance.now();
  }

  /**
   * Charges the time since `start` to steps [step, step + count) on the plan's device, or
   * on the fallback device that ran them instead and why (`fallback`).
   */
  stop(
    step: number,
    count: number,
    fallback?: { device: string; reason: string },
  ): void {
    const device = fallback?.device ?? this.#steps[step].device;
    const timing = this.#timing;
    if (!timing) return;
    const us = (performance.now() - this.#started) * 1000;
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
