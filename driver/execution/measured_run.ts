/**
 * Measured runs of an executable: outputs, the whole time and each plan step's time, every
 * failure turned into a DriverError. Used by executor workers and by the driver for plans
 * small enough to run on its own thread.
 */
import { DriverError } from "../../nnapi/errors.ts";
import type { Executable, RunOptions } from "./executable.ts";
import type { RunInput, RunOutput } from "../compilation/plan.ts";
import type { StepTiming } from "../compilation/plan.ts";

/** A measured run: outputs, the whole time and the time of each plan step. */
export interface MeasuredRun {
  outputs: RunOutput[];
  onDeviceUs: number;
  steps: StepTiming[];
}

/**
 * Runs and times one execution, turning every failure into a DriverError (an allocation
 * that cannot be had is RESOURCE_EXHAUSTED_PERSISTENT). Used by executor workers (which run
 * device units through `runAsync`) and by the driver for plans small enough to run on its
 * own thread (host steps only), which passes the time it read just before (`startedAt`).
 */
export function runMeasured(
  executable: Executable,
  inputs: readonly RunInput[],
  options: Omit<RunOptions, "timing"> = {},
): MeasuredRun {
  const started = options.startedAt ?? performance.now();
  const steps: StepTiming[] = [];
  try {
    return measured(
      executable.run(inputs, { ...options, startedAt: started, timing: steps }),
      started,
      steps,
    );
  } catch (error) {
    throw asDriverError(error);
  }
}

/** {@link runMeasured} for executors: device units run on their devices. */
export async function runMeasuredAsync(
  executable: Executable,
  inputs: readonly RunInput[],
  options: Omit<RunOptions, "timing"> = {},
): Promise<MeasuredRun> {
  if (!executable.hasDeviceUnits) return runMeasured(executable, inputs, options);
  const started = options.startedAt ?? performance.now();
  const steps: StepTiming[] = [];
  try {
    return measured(
      await executable.runAsync(inputs, { ...options, startedAt: started, timing: steps }),
      started,
      steps,
    );
  } catch (error) {
    throw asDriverError(error);
  }
}

/**
 * A finished run's outputs with the time since `started` and each step's (the run's own
 * records, rounded in place), in whole µs.
 */
function measured(outputs: RunOutput[], started: number, steps: StepTiming[]): MeasuredRun {
  for (const t of steps) t.onDeviceUs = Math.round(t.onDeviceUs);
  return { outputs, onDeviceUs: Math.round((performance.now() - started) * 1000), steps };
}

function asDriverError(error: unknown): DriverError {
  if (error instanceof DriverError) return error;
  if (error instanceof RangeError) {
    return new DriverError(
      "RESOURCE_EXHAUSTED_PERSISTENT",
      `the execution needs more memory than is available (${error.message})`,
    );
  }
  return new DriverError("GENERAL_FAILURE", String(error));
}
